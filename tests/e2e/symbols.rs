//! Where symbols come from: perf's build-id cache, debug directories
//! searched by build-id, refusal of files with another build-id, kallsyms.

use std::process::Command;

use trawl_ingest::perf::header::sample;
use trawl_ingest::perf::records::context;
use trawl_synth::perf::{sampling, PerfDataWriter, SampleOut};

use crate::common::*;

/// A capture of one process running `/nonexistent/prog` (so the recorded
/// path never resolves) with the given build-id, sampled at `offsets`
/// (file offsets of the text), plus kernel samples.
fn synthetic(build_id: &str, offsets: &[u64]) -> Vec<u8> {
    let mut w = PerfDataWriter::new();
    let ev = w.add_event(
        sampling(
            1,
            0,
            1000,
            sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::CALLCHAIN,
        ),
        "cpu-clock",
    );
    w.mmap_kernel(
        0xffff_ffff_8100_0000,
        0x100_0000,
        0xffff_ffff_8100_0000,
        "[kernel.kallsyms]_text",
        1,
    );
    w.comm(7, 7, "prog", 2, true);
    w.mmap2(
        7,
        7,
        0x5555_0000_0000,
        0x10_0000,
        0,
        "/nonexistent/prog",
        3,
        Some(&hex_to_bytes(build_id)),
    );
    for (i, off) in offsets.iter().enumerate() {
        let ip = 0x5555_0000_0000 + off;
        w.sample(&SampleOut {
            event: ev,
            ip,
            pid: 7,
            tid: 7,
            time: 10 + i as u64,
            period: 1000,
            callchain: vec![context::USER, ip],
            ..Default::default()
        });
    }
    let kip = 0xffff_ffff_8100_0150;
    w.sample(&SampleOut {
        event: ev,
        misc: 1,
        ip: kip,
        pid: 7,
        tid: 7,
        time: 100,
        period: 1000,
        callchain: vec![context::KERNEL, kip],
        ..Default::default()
    });
    w.finished_round();
    w.to_bytes()
}

/// File offsets of two functions of the fixture binary `hot`, from nm
/// (the binary is PIE, text offsets equal virtual addresses).
fn hot_function_offsets() -> Vec<(String, u64)> {
    let out = Command::new("nm")
        .arg(fixture_bin().join("hot"))
        .output()
        .expect("nm (binutils)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    ["spin_a", "spin_b"]
        .iter()
        .map(|name| {
            let l = text
                .lines()
                .find(|l| l.ends_with(&format!(" T {name}")))
                .unwrap();
            (
                name.to_string(),
                u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap() + 4,
            )
        })
        .collect()
}

/// [`synthetic`] with the build-id of the fixture `hot` and samples in
/// `spin_a` and `spin_b`, written to `c.data` in a new directory.
fn synthetic_hot() -> (tempfile::TempDir, std::path::PathBuf) {
    let hot = fixture_bin().join("hot");
    let bid = trawl_symbolize::build_id_of(&hot).unwrap();
    let offsets: Vec<u64> = hot_function_offsets().iter().map(|f| f.1).collect();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.data");
    std::fs::write(&f, synthetic(&bid, &offsets)).unwrap();
    (dir, f)
}

fn functions(cap: &std::path::Path) -> Vec<String> {
    csv_rows(&trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT function FROM frame_name WHERE context = 'user' ORDER BY rel_pc",
        "--format",
        "csv",
    ]))
    .into_iter()
    .map(|r| r[0].clone())
    .collect()
}

#[test]
fn debug_dir_is_searched_by_build_id_and_mismatches_are_refused() {
    let hot = fixture_bin().join("hot");
    let bid = trawl_symbolize::build_id_of(&hot).unwrap();
    let funcs = hot_function_offsets();
    let offsets: Vec<u64> = funcs.iter().map(|f| f.1).collect();
    let dir = tempfile::tempdir().unwrap();

    // Right build-id: found by scanning the debug dir (the file name differs).
    let dbg = dir.path().join("dbg");
    std::fs::create_dir_all(dbg.join("sub")).unwrap();
    std::fs::copy(&hot, dbg.join("sub/renamed-binary")).unwrap();
    let f = dir.path().join("ok.data");
    std::fs::write(&f, synthetic(&bid, &offsets)).unwrap();
    let cap = dir.path().join("ok");
    ingest_file(&f, &cap, &["--debug-dir", dbg.to_str().unwrap()]);
    assert_eq!(functions(&cap), vec!["spin_a", "spin_b"]);

    // Same name, other build-id: refused, and said so. (HOME is empty so
    // that no build-id cache of this machine supplies the right file.)
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(fixture_bin().join("threads"), other.join("prog")).unwrap();
    let cap2 = dir.path().join("mismatch");
    let home = tempfile::tempdir().unwrap();
    let o = trawl_with_home(
        home.path(),
        &[
            "ingest",
            f.to_str().unwrap(),
            "-o",
            cap2.to_str().unwrap(),
            "--debug-dir",
            other.to_str().unwrap(),
        ],
    );
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("build_id_mismatch"));
    let st = sql_scalar(
        &cap2,
        "SELECT status FROM symbol_file WHERE path = '/nonexistent/prog'",
    );
    assert_eq!(st, "build_id_mismatch");
    assert!(functions(&cap2).iter().all(|f| f.starts_with("0x")));
}

#[test]
fn perf_buildid_cache_is_used() {
    // perf_home() ran `perf buildid-cache -a` on the fixture binaries.
    let (dir, f) = synthetic_hot();
    let cap = dir.path().join("cap");
    let o = trawl_with_home(
        perf_home(),
        &["ingest", f.to_str().unwrap(), "-o", cap.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(functions(&cap), vec!["spin_a", "spin_b"]);
    let bin = sql_scalar(
        &cap,
        "SELECT binary FROM symbol_file WHERE path = '/nonexistent/prog'",
    );
    assert!(bin.starts_with(perf_home().to_str().unwrap()), "{bin}");
}

#[test]
fn kallsyms_file_names_kernel_frames() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("k.data");
    std::fs::write(&f, synthetic("00", &[])).unwrap();
    let ks = dir.path().join("kallsyms");
    std::fs::write(
        &ks,
        "ffffffff81000000 T _stext\nffffffff81000100 t do_work\nffffffff81000200 T next_fn\n",
    )
    .unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&f, &cap, &["--kallsyms", ks.to_str().unwrap()]);
    let row = sql_scalar(&cap, "SELECT f.function, s.symbol_offset FROM frame_name f JOIN symbol s USING (segment, module_id, rel_pc) WHERE f.context = 'kernel'");
    assert_eq!(row, "do_work,80");
}

/// A capture from another machine: the recorded path `/nonexistent/prog`
/// is found below `--sysroot DIR` (perf's `--symfs`) as `DIR/nonexistent/prog`,
/// or with `--remap-path /nonexistent=DIR` as `DIR/prog`, and symbolized
/// from there. `trawl symbolize` redoes it on an existing capture.
#[test]
fn sysroot_and_path_remapping_find_the_binary() {
    let (dir, f) = synthetic_hot();
    let home = tempfile::tempdir().unwrap();

    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("nonexistent")).unwrap();
    let hot = fixture_bin().join("hot");
    std::fs::copy(&hot, root.join("nonexistent/prog")).unwrap();
    let cap = dir.path().join("sysroot");
    let run = |args: &[&str]| {
        let o = trawl_with_home(home.path(), args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    let data = f.to_str().unwrap();
    run(&[
        "ingest",
        data,
        "-o",
        cap.to_str().unwrap(),
        "--sysroot",
        root.to_str().unwrap(),
    ]);
    assert_eq!(functions(&cap), vec!["spin_a", "spin_b"]);

    let moved = dir.path().join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(&hot, moved.join("prog")).unwrap();
    let cap2 = dir.path().join("remap");
    run(&[
        "ingest",
        data,
        "-o",
        cap2.to_str().unwrap(),
        "--no-symbolize",
    ]);
    let remap = format!("/nonexistent={}", moved.display());
    // Without the store, where the first run's lookups were kept (it
    // would name the functions from what it learnt in the sysroot).
    run(&[
        "symbolize",
        cap2.to_str().unwrap(),
        "--remap-path",
        &remap,
        "--no-symbol-store",
    ]);
    assert_eq!(functions(&cap2), vec!["spin_a", "spin_b"]);
    assert_eq!(
        sql_scalar(
            &cap2,
            "SELECT binary FROM symbol_file WHERE path = '/nonexistent/prog'"
        ),
        moved.join("prog").display().to_string()
    );

    // A malformed mapping is a usage error.
    let o = trawl(&[
        "symbolize",
        cap2.to_str().unwrap(),
        "--remap-path",
        "nonexistent",
    ]);
    assert_refused(&o, "expected FROM=TO");
}

#[test]
fn a_separate_debug_file_is_never_taken_for_the_binary() {
    // A directory as perf's build-id cache keeps a binary: `elf` (the
    // binary) beside `debug` (objcopy --only-keep-debug: same build-id,
    // code sections NOBITS). Given as --debug-dir, the functions are named
    // and annotate decodes the binary's bytes: the same instructions as
    // objdump -d shows at spin_a.
    let hot = fixture_bin().join("hot");
    let bid = trawl_symbolize::build_id_of(&hot).unwrap();
    let offsets: Vec<u64> = hot_function_offsets().iter().map(|f| f.1).collect();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let st = std::process::Command::new("objcopy")
        .arg("--only-keep-debug")
        .arg(&hot)
        .arg(cache.join("debug"))
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::copy(&hot, cache.join("elf")).unwrap();
    let f = dir.path().join("p.data");
    std::fs::write(&f, synthetic(&bid, &offsets)).unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&f, &cap, &["--debug-dir", cache.to_str().unwrap()]);
    assert_eq!(functions(&cap), vec!["spin_a", "spin_b"]);
    let rows = csv_maps(&trawl_ok(&[
        "report",
        "annotate",
        "spin_a",
        cap.to_str().unwrap(),
        "--format",
        "csv",
    ]));
    let objdump = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&hot)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&objdump.stdout).into_owned();
    let body = text
        .split("<spin_a>:\n")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap();
    let want: Vec<u64> = body
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim().split(':').next()?, 16).ok())
        .collect();
    let got: Vec<u64> = rows
        .iter()
        .map(|r| u64::from_str_radix(&r["address"], 16).unwrap())
        .collect();
    assert_eq!(got, want);
}
