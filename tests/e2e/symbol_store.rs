//! The symbol store: what is learnt of a binary (symbols, lines, machine
//! code, unwind tables) is kept by build-id and reused by later runs, which
//! then open no binary or debug file; a part of the store cut short or
//! changed is reported and learnt again; two runs share one store; a
//! capture holds its own symbols without it. The expected tables are those
//! of a run with an empty store (whose names the rest of the suite checks
//! against perf report, perf script and addr2line); `strace` tells which
//! files a run opened.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// trawl with the symbol store under `cache` ($XDG_CACHE_HOME).
fn trawl_in(cache: &Path, args: &[&str]) -> Output {
    Command::new(crate::common::trawl_exe())
        .env("XDG_CACHE_HOME", cache)
        .args(args)
        .output()
        .expect("run trawl")
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "trawl failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// pow.data has DWARF stacks: they are unwound at ingest from the CFI the
/// store keeps, the binaries' files not opened either.
fn ingest_args<'a>(data: &'a str, cap: &'a str, bin: &'a str) -> Vec<&'a str> {
    vec!["ingest", data, "-o", cap, "--debug-dir", bin]
}

/// The symbol tables and the flat table of a capture, as text, in a fixed
/// order (what a later run must reproduce exactly).
fn tables(cap: &Path) -> Vec<Vec<Vec<String>>> {
    [
        "SELECT module_id, rel_pc, inline_depth, inlined, function, file, line, \"column\", \
         symbol_offset, symbol_source FROM symbol ORDER BY module_id, rel_pc, inline_depth",
        "SELECT module_id, path, status FROM symbol_file ORDER BY module_id",
        "SELECT sample_id, function, module, srcline, file, line FROM perf_sample_symbolized \
         ORDER BY sample_id",
        "SELECT s.stack_id, s.depth, f.module_id, f.rel_pc, f.is_return \
         FROM stack s JOIN frame f ON s.frame_id = f.frame_id ORDER BY s.stack_id, s.depth",
    ]
    .iter()
    .map(|q| sql_rows(cap, q))
    .collect()
}

/// The files a command opened (strace -f -k -e trace=open,openat), but
/// those the dynamic loader opened (the innermost frame of the call in
/// ld.so: the shared libraries of the processes themselves, libc among
/// them, whichever way the command was installed), which are not read for
/// symbols.
fn opened(cache: &Path, args: &[&str]) -> Vec<String> {
    let log = tempfile::NamedTempFile::new().unwrap();
    let o = Command::new("strace")
        .args(["-f", "-qq", "-k", "-e", "trace=open,openat", "-o"])
        .arg(log.path())
        .arg(crate::common::trawl_exe())
        .args(args)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("strace");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(log.path()).unwrap();
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l.starts_with(" > ") {
            continue;
        }
        let innermost = lines.peek().filter(|f| f.starts_with(" > ")).copied();
        if l.contains("ENOENT") || innermost.is_some_and(|f| f.contains("/ld-linux")) {
            continue;
        }
        if let Some(p) = l.split('"').nth(1) {
            out.push(p.to_string());
        }
    }
    out
}

/// Files a symbolizer reads: every file the capture `cold` (ingested with
/// an empty store) names in `symbol_file` (the module as recorded, its
/// binary, symbol table and DWARF: the fixture binaries and the system's
/// libc and libm with their debug files), anything under the fixture
/// binaries' directory or /usr/lib/debug, and the kernel's symbols.
fn symbol_files<'a>(opened: &'a [String], cold: &Path) -> Vec<&'a String> {
    let mut named: Vec<PathBuf> = Vec::new();
    for r in sql_rows(
        cold,
        "SELECT path, binary, symbols, debug_info FROM symbol_file",
    ) {
        for p in r.iter().filter(|p| p.starts_with('/')) {
            named.push(PathBuf::from(p));
            if let Ok(c) = Path::new(p).canonicalize() {
                named.push(c);
            }
        }
    }
    assert!(
        !named.is_empty(),
        "{}: no symbol_file paths",
        cold.display()
    );
    let bin = fixture_bin();
    let bin_real = bin.canonicalize().unwrap();
    opened
        .iter()
        .filter(|p| {
            let p = Path::new(p.as_str());
            let real = p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            named.iter().any(|n| n == p || *n == real)
                || p.starts_with(&bin_real)
                || p.starts_with(&bin)
                || p.starts_with("/usr/lib/debug")
                || p == Path::new("/proc/kallsyms")
        })
        .collect()
}

#[test]
fn a_warm_store_gives_the_same_tables_and_opens_no_symbol_file() {
    // hot-fp.data: the fixture binary (DWARF) and libc (its lines from
    // libc6-dbg's debug file); inline.data: inline chains; pow.data: libm.
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let bin = fixture_bin();
    for data in ["hot-fp.data", "inline.data", "pow.data"] {
        let f = fixture(data);
        let cold = t.path().join(format!("cold-{data}"));
        let warm = t.path().join(format!("warm-{data}"));
        let alone = t.path().join(format!("alone-{data}"));
        let (f, bin) = (f.to_str().unwrap(), bin.to_str().unwrap());
        let first = opened(&cache, &ingest_args(f, cold.to_str().unwrap(), bin));
        let read = symbol_files(&first, &cold);
        // libc: as installed, or the copy perf's build-id cache keeps
        // (~/.debug/.build-id/..., which `perf record` fills) when the
        // symbolizer took that one.
        let libc: Vec<String> = sql_rows(
            &cold,
            "SELECT binary, symbols, debug_info FROM symbol_file WHERE path LIKE '%/libc.so%'",
        )
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect();
        assert!(
            read.iter()
                .any(|p| p.contains("/libc.so") || libc.iter().any(|l| l == *p)),
            "{data}: the first run reads the binaries and libc: {read:?} (libc's files: {libc:?})"
        );
        let second = opened(&cache, &ingest_args(f, warm.to_str().unwrap(), bin));
        assert_eq!(
            symbol_files(&second, &cold),
            Vec::<&String>::new(),
            "{data}: the second run reads the store only"
        );
        assert_eq!(tables(&cold), tables(&warm), "{data}");
        // And both equal a run without any store.
        ok(trawl_in(
            &cache,
            &[
                "ingest",
                f,
                "-o",
                alone.to_str().unwrap(),
                "--debug-dir",
                bin,
                "--no-symbol-store",
            ],
        ));
        assert_eq!(tables(&alone), tables(&warm), "{data}");
    }
}

/// Rewrites, with pyarrow, every store part under `store` whose `symbol`
/// rows name `from` so that they name `to` (a valid Parquet file with the
/// part's metadata, its checksum among it, kept as it was); returns how
/// many parts it rewrote.
fn rename_symbol(store: &Path, from: &str, to: &str) -> usize {
    let script = r#"
import sys
import pyarrow as pa
import pyarrow.parquet as pq
n = 0
for path in sys.argv[3:]:
    t = pq.read_table(path)
    if "name" not in t.column_names or "kind" not in t.column_names:
        continue
    kinds, names = t.column("kind").to_pylist(), t.column("name").to_pylist()
    new = [sys.argv[2] if k == "symbol" and v == sys.argv[1] else v for k, v in zip(kinds, names)]
    if new == names:
        continue
    i = t.column_names.index("name")
    t = t.set_column(i, t.schema.field(i), pa.array(new, type=t.schema.field(i).type))
    assert t.schema.metadata == pq.read_schema(path).metadata
    pq.write_table(t, path)
    n += 1
print(n)
"#;
    let parts: Vec<PathBuf> = walk(store)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    let o = Command::new("python3")
        .args(["-c", script, from, to])
        .args(&parts)
        .output()
        .expect("python3 with pyarrow");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
}

#[test]
fn a_store_part_cut_short_or_changed_is_reported_and_learnt_again() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let (f, bin) = (fixture("hot-fp.data"), fixture_bin());
    let (f, bin) = (f.to_str().unwrap(), bin.to_str().unwrap());
    let cold = t.path().join("cold");
    ok(trawl_in(
        &cache,
        &ingest_args(f, cold.to_str().unwrap(), bin),
    ));
    let want = tables(&cold);
    let parts: Vec<PathBuf> = walk(&cache.join("trawl/symbols"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    assert!(parts.len() >= 2, "{parts:?}");
    for (i, damage) in ["cut", "flip", "value"].iter().enumerate() {
        // Every part damaged: cut to half, or one byte changed in its data;
        // or, in a whole and valid Parquet file, one value changed: the
        // part's row checksum is what tells.
        if *damage == "value" {
            let changed = rename_symbol(&cache.join("trawl/symbols"), "spin_a", "spin_x");
            assert_eq!(changed, 1, "one part names spin_a");
        }
        for p in walk(&cache.join("trawl/symbols")) {
            if p.extension().is_none_or(|x| x != "parquet") || *damage == "value" {
                continue;
            }
            let mut b = std::fs::read(&p).unwrap();
            match *damage {
                "cut" => b.truncate(b.len() / 2),
                _ => b[8] ^= 0x55,
            }
            std::fs::write(&p, b).unwrap();
        }
        let cap = t.path().join(format!("again{i}"));
        let err = ok(trawl_in(
            &cache,
            &ingest_args(f, cap.to_str().unwrap(), bin),
        ));
        assert!(err.contains("symbol store:"), "{damage}: {err}");
        assert!(err.contains("learnt again"), "{damage}: {err}");
        assert_eq!(tables(&cap), want, "{damage}: never a wrong name");
        // ... and each damaged part is a row of the capture's diagnostics,
        // naming the part.
        let rows = sql_rows(
            &cap,
            "SELECT source_id, source, severity, kind FROM diagnostic WHERE source_id = -1",
        );
        assert!(!rows.is_empty(), "{damage}");
        for r in &rows {
            assert!(
                r[1].ends_with(".parquet") && r[1].contains("trawl/symbols/"),
                "{r:?}"
            );
            assert_eq!(
                r[2..],
                ["warning", "symbol_store_damaged"],
                "{damage}: {r:?}"
            );
        }
        // Rebuilt: the next run reads it and says nothing.
        let cap = t.path().join(format!("after{i}"));
        let err = ok(trawl_in(
            &cache,
            &ingest_args(f, cap.to_str().unwrap(), bin),
        ));
        assert!(!err.contains("symbol store:"), "{damage}: {err}");
        assert_eq!(tables(&cap), want, "{damage}");
        assert_eq!(
            sql_scalar(&cap, "SELECT count(*) FROM diagnostic WHERE source_id = -1"),
            "0"
        );
    }
}

#[test]
fn two_runs_at_once_share_one_store() {
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let (bin, data) = (fixture_bin(), ["hot-fp.data", "hot-dwarf.data"]);
    // Alone, each with a store of its own: what both must give.
    let want: Vec<_> = data
        .iter()
        .map(|d| {
            let cap = t.path().join(format!("alone-{d}"));
            ok(trawl(&[
                "ingest",
                fixture(d).to_str().unwrap(),
                "-o",
                cap.to_str().unwrap(),
                "--debug-dir",
                bin.to_str().unwrap(),
            ]));
            tables(&cap)
        })
        .collect();
    for round in 0..3 {
        let kids: Vec<_> = data
            .iter()
            .map(|d| {
                let cap = t.path().join(format!("r{round}-{d}"));
                let child = Command::new(crate::common::trawl_exe())
                    .env("XDG_CACHE_HOME", &cache)
                    .args([
                        "ingest",
                        fixture(d).to_str().unwrap(),
                        "-o",
                        cap.to_str().unwrap(),
                        "--debug-dir",
                        bin.to_str().unwrap(),
                    ])
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (cap, child)
            })
            .collect();
        for ((cap, child), want) in kids.into_iter().zip(&want) {
            let o = child.wait_with_output().unwrap();
            let err = ok(o);
            assert!(!err.contains("symbol store:"), "round {round}: {err}");
            assert_eq!(&tables(&cap), want, "round {round}");
        }
    }
    // Nothing half-written is left in the store.
    let tmp: Vec<_> = walk(&cache.join("trawl/symbols/.tmp"));
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn a_capture_is_read_without_the_store() {
    // The capture holds the symbols it uses: with the store gone and the
    // capture moved, its reports are the same.
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let (f, bin) = (fixture("hot-fp.data"), fixture_bin());
    let cap = t.path().join("cap");
    ok(trawl_in(
        &cache,
        &ingest_args(
            f.to_str().unwrap(),
            cap.to_str().unwrap(),
            bin.to_str().unwrap(),
        ),
    ));
    // Both reports run with the same store, whose symbols the capture was
    // ingested with: before with it, after with it gone.
    let report = |cap: &Path| {
        let o = trawl_in(
            &cache,
            &[
                "report",
                "hotspots",
                cap.to_str().unwrap(),
                "--format",
                "csv",
            ],
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let before = report(&cap);
    std::fs::remove_dir_all(&cache).unwrap();
    let moved = t.path().join("elsewhere");
    std::fs::rename(&cap, &moved).unwrap();
    assert_eq!(report(&moved), before);
    assert!(before.contains("spin_a"));
}

#[test]
fn annotate_decodes_the_function_it_shows_once() {
    // Ingest decodes no code; `report annotate` decodes the function asked
    // for and keeps it in the capture; `trawl sql`'s annotate(...) does the
    // same; `trawl symbolize --code` keeps every sampled function's.
    let (_d, cap) = ingest("hot-fp.data");
    let instr = cap.join("instruction.parquet");
    assert!(!instr.exists(), "ingest decodes nothing");
    trawl_ok(&["report", "annotate", "spin_a", cap.to_str().unwrap()]);
    let held = || {
        sql_rows(
            &cap,
            "SELECT DISTINCT function FROM instruction ORDER BY function",
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect::<Vec<_>>()
    };
    assert_eq!(held(), vec!["spin_a"]);
    let m = std::fs::metadata(&instr).unwrap().modified().unwrap();
    trawl_ok(&["report", "annotate", "spin_a", cap.to_str().unwrap()]);
    assert_eq!(
        std::fs::metadata(&instr).unwrap().modified().unwrap(),
        m,
        "asked again: not decoded again"
    );
    let n = sql_scalar(
        &cap,
        "SELECT count(*) FROM annotate('spin_b') WHERE samples > 0",
    );
    assert!(n.parse::<u64>().unwrap() > 0, "{n}");
    assert_eq!(held(), vec!["spin_a", "spin_b"]);
    trawl_ok(&[
        "symbolize",
        cap.to_str().unwrap(),
        "--code",
        "--debug-dir",
        fixture_bin().to_str().unwrap(),
    ]);
    let all = held();
    for f in ["spin_a", "spin_b", "fib", "libc_work"] {
        assert!(all.iter().any(|x| x == f), "{f} in {all:?}");
    }
}

#[test]
fn a_function_is_decoded_once_per_binary_whatever_the_capture() {
    // Two captures of one binary, one store: annotating the second takes
    // the code (and its lines) from the store, opening neither the binary
    // nor a debug file, and shows what the first showed (which the
    // annotate tests check against perf annotate). With an empty store
    // the same rows again.
    let t = tempfile::tempdir().unwrap();
    let cache = t.path().join("cache");
    let (f, bin) = (fixture("hot-fp.data"), fixture_bin());
    let (f, bin) = (f.to_str().unwrap(), bin.to_str().unwrap());
    let caps: Vec<PathBuf> = ["one", "two", "alone"]
        .iter()
        .map(|n| t.path().join(n))
        .collect();
    for c in &caps {
        ok(trawl_in(&cache, &ingest_args(f, c.to_str().unwrap(), bin)));
    }
    let annotate = |c: &Path| -> Vec<String> {
        ["report", "annotate", "spin_a", c.to_str().unwrap()]
            .map(String::from)
            .to_vec()
    };
    let a = annotate(&caps[0]);
    let first = opened(&cache, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        !symbol_files(&first, &caps[0]).is_empty(),
        "the first annotate decodes from the binary"
    );
    let code = walk(&cache.join("trawl/symbols"));
    assert!(
        code.iter()
            .any(|p| p.to_string_lossy().contains("/code/code-")),
        "the code is kept in the store: {code:?}"
    );
    let a = annotate(&caps[1]);
    let second = opened(&cache, &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        symbol_files(&second, &caps[0]),
        Vec::<&String>::new(),
        "the second annotate reads the store only"
    );
    ok(trawl_in(
        &t.path().join("no-cache"),
        &["report", "annotate", "spin_a", caps[2].to_str().unwrap()],
    ));
    let rows = |c: &Path| {
        sql_rows(
            c,
            "SELECT module_id, function, function_rel_pc, rel_pc, address, \
             encode(bytes, 'hex'), text, file, line, inline_function \
             FROM instruction ORDER BY rel_pc",
        )
    };
    let want = rows(&caps[0]);
    assert!(want.len() > 10, "{want:?}");
    assert_eq!(rows(&caps[1]), want);
    assert_eq!(rows(&caps[2]), want);
}
