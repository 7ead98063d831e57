//! Truncated, corrupt and unexpected input: no panic, no hang, rows up to
//! the damage kept, a diagnostic naming the byte offset, `--strict` fails,
//! and no half-written capture is left behind.

use std::path::{Path, PathBuf};

use trawl_ingest::{ingest, Error, IngestOptions};

use crate::common::*;

/// (file offset, size) of every PERF_RECORD_SAMPLE, from `perf script -D`.
/// In pipe mode perf counts offsets from the end of the 16-byte pipe
/// header; they are turned into file offsets here.
fn perf_sample_records(file: &Path) -> Vec<(u64, u64)> {
    let head = std::fs::read(file).unwrap();
    let pipe = u64::from_le_bytes(head[8..16].try_into().unwrap()) == 16;
    let base = if pipe { 16 } else { 0 };
    let out = perf(&["script", "-D", "-i", file.to_str().unwrap()]);
    let mut v = Vec::new();
    for l in out.lines() {
        let mut it = l.split_whitespace();
        let (Some(_ts), Some(off), Some(size), Some(kind)) =
            (it.next(), it.next(), it.next(), it.next())
        else {
            continue;
        };
        if !kind.starts_with("PERF_RECORD_SAMPLE") || !off.starts_with("0x") {
            continue;
        }
        let off = u64::from_str_radix(&off[2..], 16).unwrap();
        let size =
            u64::from_str_radix(size.trim_start_matches("[0x").trim_end_matches("]:"), 16).unwrap();
        v.push((off + base, size));
    }
    v
}

fn count_samples(cap: &Path) -> u64 {
    let f = std::fs::File::open(cap.join("perf_sample.parquet")).unwrap();
    let r = trawl_ingest::parquet::file::reader::SerializedFileReader::new(f).unwrap();
    use trawl_ingest::parquet::file::reader::FileReader;
    r.metadata().file_metadata().num_rows() as u64
}

fn diagnostics(cap: &Path) -> Vec<(Option<i64>, String, String)> {
    let out = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT byte_offset, kind, message FROM diagnostic",
        "--format",
        "csv",
    ]);
    csv_rows(&out)
        .into_iter()
        .map(|r| (r[0].parse().ok(), r[1].clone(), r[2].clone()))
        .collect()
}

fn cut(src: &Path, at: usize, dir: &Path) -> PathBuf {
    let b = std::fs::read(src).unwrap();
    let p = dir.join(format!("cut-{at}.data"));
    std::fs::write(&p, &b[..at.min(b.len())]).unwrap();
    p
}

fn run(input: &Path, out: &Path, strict: bool) -> Result<trawl_ingest::IngestSummary, Error> {
    ingest(
        &[input.to_path_buf()],
        out,
        &IngestOptions {
            strict,
            ..Default::default()
        },
        |_| Ok(()),
    )
}

/// Cuts `name` at many offsets. Expected sample counts: the sample records
/// perf script -D lists that end before the cut.
fn truncation_keeps_whole_records(name: &str, exact: bool) {
    let src = fixture(name);
    let len = std::fs::metadata(&src).unwrap().len() as usize;
    let samples = perf_sample_records(&src);
    let dir = tempfile::tempdir().unwrap();
    let mut cuts: Vec<usize> = (0..70).map(|i| i * len / 70).collect();
    cuts.extend([1, 7, 8, 15, 16, 17, 103, 104, 105, len - 1, len - 7, len]);
    // Longer prefixes first after shorter ones: a longer prefix keeps at
    // least the samples of a shorter one.
    cuts.sort_unstable();
    cuts.dedup();
    let mut last = 0;
    let mut ok_cuts = 0;
    for &at in &cuts {
        let f = cut(&src, at, dir.path());
        let out = dir.path().join(format!("cap-{at}"));
        match run(&f, &out, false) {
            Ok(sum) => {
                ok_cuts += 1;
                let n = count_samples(&out);
                if exact {
                    let want = samples.iter().filter(|(o, s)| o + s <= at as u64).count() as u64;
                    assert_eq!(n, want, "{name} cut at {at}");
                }
                if at < len {
                    let d = &sum.inputs[0].diagnostics;
                    assert!(
                        d.iter()
                            .any(|d| d.kind == "truncated" || d.kind == "bad_compressed"),
                        "{name} cut at {at}: no truncation diagnostic: {d:?}"
                    );
                    for d in d {
                        if let Some(b) = d.position.byte_offset() {
                            assert!(b <= at as u64, "{name} cut at {at}: diagnostic offset {b}");
                        }
                    }
                }
                assert!(
                    n >= last,
                    "{name} cut at {at}: {n} samples, fewer than the {last} of a shorter prefix"
                );
                if at == len {
                    // The whole file: every sample perf reads.
                    assert_eq!(n, perf_script_samples(&src) as u64, "{name} whole");
                }
                last = n;
            }
            // A cut inside the header or the attributes: the input cannot be
            // read at all, which is an error naming the file and offset.
            Err(Error::BadInput {
                offset, message, ..
            }) => {
                assert!(offset <= len as u64, "{message}");
                assert!(!out.exists(), "failed run left {out:?}");
            }
            Err(Error::UnknownFormat { .. }) => assert!(at < 16, "{name} cut at {at}"),
            Err(e) => panic!("{name} cut at {at}: unexpected error {e}"),
        }
    }
    assert!(ok_cuts > 50, "{name}: only {ok_cuts} cuts readable");
}

#[test]
fn truncated_file_mode() {
    truncation_keeps_whole_records("hot-fp.data", true);
}

#[test]
fn truncated_pipe_mode() {
    truncation_keeps_whole_records("hot-pipe.data", true);
}

#[test]
fn truncated_zstd_compressed() {
    // Records inside compressed chunks have no file offset of their own;
    // here only the absence of panics, the diagnostics and monotonic counts
    // are checked.
    truncation_keeps_whole_records("hot-z.data", false);
}

#[test]
fn strict_fails_and_leaves_the_old_capture() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    run(&fixture("hot-fp.data"), &out, false).unwrap();
    let before = count_samples(&out);
    let f = cut(&fixture("hot-fp.data"), 50_000, dir.path());
    match run(&f, &out, true) {
        Err(Error::Diagnostic(d)) => {
            assert_eq!(d.kind, "truncated", "{d}");
            assert!(matches!(d.position, trawl_ingest::Position::Byte(_)), "{d}");
        }
        other => panic!("expected a strict failure, got {other:?}"),
    }
    assert_eq!(count_samples(&out), before, "old capture must survive");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("trawl-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Through the CLI: exit status non-zero with the offset in the message.
    let o = trawl(&[
        "ingest",
        f.to_str().unwrap(),
        "-o",
        dir.path().join("c2").to_str().unwrap(),
        "--strict",
    ]);
    assert_refused(&o, "file is truncated");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("cut-50000.data@"), "{err}");
}

#[test]
fn garbage_and_empty_inputs_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let junk: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let p = dir.path().join("junk");
    std::fs::write(&p, &junk).unwrap();
    assert!(matches!(
        run(&p, &dir.path().join("a"), false),
        Err(Error::UnknownFormat { .. })
    ));
    let p = dir.path().join("empty");
    std::fs::write(&p, b"").unwrap();
    assert!(matches!(
        run(&p, &dir.path().join("b"), false),
        Err(Error::UnknownFormat { .. })
    ));
    // A valid header followed by garbage records.
    let mut b = std::fs::read(fixture("hot-fp.data")).unwrap();
    let data_off = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    for (i, v) in junk.iter().enumerate().take(4000) {
        b[data_off + 200 + i] = *v;
    }
    let p = dir.path().join("garbled.data");
    std::fs::write(&p, &b).unwrap();
    let s = run(&p, &dir.path().join("c"), false).unwrap();
    assert!(!s.inputs[0].diagnostics.is_empty());
    // Garbage piped through stdin-like pipe mode: a pipe header then junk.
    let mut pipe = std::fs::read(fixture("hot-pipe.data")).unwrap();
    pipe.truncate(16);
    pipe.extend_from_slice(&junk[..5000]);
    let p = dir.path().join("garbled-pipe.data");
    std::fs::write(&p, &pipe).unwrap();
    let _ = run(&p, &dir.path().join("d"), false);
}

/// Inserts a record before the first record of the data section and fixes
/// the header's data size.
fn splice_record(src: &Path, record: &[u8], dir: &Path) -> PathBuf {
    let mut b = std::fs::read(src).unwrap();
    let off = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    let size = u64::from_le_bytes(b[48..56].try_into().unwrap());
    b.splice(off..off, record.iter().copied());
    b[48..56].copy_from_slice(&(size + record.len() as u64).to_le_bytes());
    // Feature sections moved by the insertion.
    let feat_table = off + size as usize + record.len();
    let nfeat: u32 = (0..4)
        .map(|i| u64::from_le_bytes(b[72 + 8 * i..80 + 8 * i].try_into().unwrap()).count_ones())
        .sum();
    for k in 0..nfeat as usize {
        let p = feat_table + 16 * k;
        let o = u64::from_le_bytes(b[p..p + 8].try_into().unwrap());
        b[p..p + 8].copy_from_slice(&(o + record.len() as u64).to_le_bytes());
    }
    let p = dir.join("spliced.data");
    std::fs::write(&p, &b).unwrap();
    p
}

#[test]
fn unknown_record_types_are_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // Type 60: in the kernel's range but unknown; perf script skips it and
    // reads the rest (for an unknown type >= 64 perf stops at it, trawl
    // still skips it with a warning: checked below without perf).
    let mut rec = Vec::new();
    rec.extend_from_slice(&60u32.to_le_bytes());
    rec.extend_from_slice(&0u16.to_le_bytes());
    rec.extend_from_slice(&24u16.to_le_bytes());
    rec.extend_from_slice(&[0xab; 16]);
    let p = splice_record(&fixture("hot-fp.data"), &rec, dir.path());
    // perf agrees the file is still readable and has the same samples
    // (it prints them all, then exits 255 for the record it skipped).
    let by_perf = perf_script_samples_failing(&p, "Found 1 unknown events");
    assert_eq!(by_perf, perf_script_samples(&fixture("hot-fp.data")));
    let out = dir.path().join("cap");
    let s = run(&p, &out, false).unwrap();
    assert_eq!(count_samples(&out) as usize, by_perf);
    let d = diagnostics(&out);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].1, "unknown_record");
    let data_off = u64::from_le_bytes(std::fs::read(&p).unwrap()[40..48].try_into().unwrap());
    assert_eq!(d[0].0, Some(data_off as i64));
    assert_eq!(s.inputs[0].diagnostics.len(), 1);
    assert!(run(&p, &dir.path().join("strict"), true).is_err());

    // A user type newer than any perf's (87 and up) and one past the user
    // range: skipped, each named.
    for ty in [100u8, 200] {
        rec[0] = ty;
        let p = splice_record(&fixture("hot-fp.data"), &rec, dir.path());
        let out = dir.path().join(format!("cap{ty}"));
        run(&p, &out, false).unwrap();
        assert_eq!(
            count_samples(&out) as usize,
            perf_script_samples(&fixture("hot-fp.data"))
        );
        let d = diagnostics(&out);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].1, "unknown_record");
    }
}

#[test]
fn corrupt_record_size_stops_with_offset() {
    // A record whose size field is 0 in the middle of the data: everything
    // before it is kept (expected: sample records before that offset, from
    // perf script -D on the intact file).
    let src = fixture("hot-fp.data");
    let samples = perf_sample_records(&src);
    let (off, _) = samples[samples.len() / 2];
    let mut b = std::fs::read(&src).unwrap();
    b[off as usize + 6..off as usize + 8].copy_from_slice(&0u16.to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.data");
    std::fs::write(&p, &b).unwrap();
    let out = dir.path().join("cap");
    run(&p, &out, false).unwrap();
    let want = samples.iter().filter(|(o, _)| *o < off).count() as u64;
    assert_eq!(count_samples(&out), want);
    let d = diagnostics(&out);
    assert!(
        d.iter()
            .any(|(o, k, _)| k == "bad_record_size" && *o == Some(off as i64)),
        "{d:?}"
    );
}

/// Random byte flips, word overwrites and cuts of every fixture kind, run
/// through the reader in a debug build (so arithmetic overflow panics too):
/// whatever happens must be an `Ok` with diagnostics or an `Error`.
#[test]
fn mutated_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut x: u64 = 0x2545F4914F6CDD1D;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for name in [
        "hot-fp.data",
        "hot-pipe.data",
        "hot-z.data",
        "group.data",
        "hot-dwarf.data",
    ] {
        let orig = std::fs::read(fixture(name)).unwrap();
        for round in 0..60 {
            let mut b = orig.clone();
            match round % 3 {
                0 => {
                    for _ in 0..8 {
                        let i = (rnd() as usize) % b.len();
                        b[i] ^= 1 << (rnd() % 8);
                    }
                }
                1 => {
                    // Overwrite a u64 with an extreme value (sizes, offsets, counts).
                    let i = ((rnd() as usize) % (b.len() - 8)) & !7;
                    let v = [u64::MAX, 0, 1 << 63, u32::MAX as u64, rnd()][(rnd() % 5) as usize];
                    b[i..i + 8].copy_from_slice(&v.to_le_bytes());
                }
                _ => {
                    let i = (rnd() as usize) % b.len();
                    b.truncate(i.max(1));
                    let j = (rnd() as usize) % b.len();
                    b[j] = b[j].wrapping_add(1);
                }
            }
            let p = dir.path().join(format!("m-{name}-{round}"));
            std::fs::write(&p, &b).unwrap();
            let out = dir.path().join(format!("c-{name}-{round}"));
            let _ = run(&p, &out, false);
            let _ = std::fs::remove_dir_all(&out);
        }
    }
}

#[test]
fn progress_counts_every_input_byte() {
    // The counter a progress display reads ends at the inputs' total size
    // (a perf.data and an strace dump).
    let t = tempfile::tempdir().unwrap();
    let inputs = [
        fixture("hot-fp.data"),
        crate::common::root().join("fixtures/strace/io.strace"),
    ];
    let total: u64 = inputs
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    ingest(
        &inputs,
        &t.path().join("cap"),
        &IngestOptions {
            progress: Some(done.clone()),
            ..Default::default()
        },
        |_| Ok(()),
    )
    .unwrap();
    assert_eq!(done.load(std::sync::atomic::Ordering::Relaxed), total);
}

#[test]
fn a_cancelled_ingest_writes_nothing() {
    // IngestOptions::cancel (the Python package sets it on Ctrl-C): the
    // readers stop where they report progress, the run fails with
    // Interrupted, and neither the capture nor its staging directory is
    // left.
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("cap");
    for input in [
        fixture("hot-fp.data"),
        crate::common::root().join("fixtures/strace/io.strace"),
        crate::common::root().join("fixtures/memlog/pages.lackey.zst"),
    ] {
        let r = ingest(
            &[input.clone()],
            &out,
            &IngestOptions {
                cancel: Some(std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
                    true,
                ))),
                ..Default::default()
            },
            |_| panic!("a cancelled ingest is not committed"),
        );
        assert!(
            matches!(r, Err(Error::Interrupted)),
            "{input:?}: {:?}",
            r.map(|_| ())
        );
        let left: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{input:?}: {left:?}");
    }
}

/// Runs `trawl ARGS` and kills it after `secs`: None when it did not
/// finish in time.
fn trawl_within(args: &[&str], secs: u64) -> Option<std::process::Output> {
    let mut child = std::process::Command::new(crate::common::trawl_exe())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return Some(child.wait_with_output().unwrap());
        }
        if start.elapsed().as_secs() >= secs {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A perf.data in which process 7 maps each of `paths` (one mapping each,
/// 64 GiB apart) and is sampled once in each, at file offset `offset`.
fn perf_naming(paths: &[String], offset: u64) -> Vec<u8> {
    use trawl_ingest::perf::header::sample;
    use trawl_ingest::perf::records::context;
    use trawl_synth::perf::{sampling, PerfDataWriter, SampleOut};
    let mut w = PerfDataWriter::new();
    let ev = w.add_event(
        sampling(
            1,
            0,
            1000,
            sample::IP | sample::TID | sample::TIME | sample::CALLCHAIN,
        ),
        "cpu-clock",
    );
    w.comm(7, 7, "victim", 1, true);
    for (i, p) in paths.iter().enumerate() {
        let base = 0x10_0000_0000u64 * (i as u64 + 1);
        w.mmap2(7, 7, base, 0x10000, 0, p, 2, None);
        let ip = base + offset;
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
    w.finished_round();
    w.to_bytes()
}

/// An strace -k dump of process 7: one call per path, its stack a frame in
/// that file at `offset`.
fn strace_naming(paths: &[String], offset: u64) -> String {
    let mut st = String::new();
    for (i, p) in paths.iter().enumerate() {
        st.push_str(&format!(
            "7 1795330737.60{i}000 getpid() = 7 <0.000001>\n > {p}(main+0x10) [{offset:#x}]\n"
        ));
    }
    st
}

/// The files a capture names are untrusted: the symbolizer opens only
/// regular files. A perf.data whose mappings name a FIFO (opening it for
/// reading would block forever), devices (/dev/zero reads without end,
/// /dev/tty), a socket, /proc/self/mem, a symbolic link to /dev/zero and a
/// 1 TiB sparse file, with a sample in each, and an strace dump whose stack
/// frames name them: the ingests finish, and each module's symbol_file row
/// says it was not used.
#[test]
fn hostile_module_paths_neither_block_nor_read_without_end() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let sock = d.join("sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let link = d.join("zero-link");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let sparse = d.join("sparse");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 40)
        .unwrap();
    let paths: Vec<String> = [
        fifo.to_str().unwrap(),
        "/dev/zero",
        "/dev/tty",
        sock.to_str().unwrap(),
        "/proc/self/mem",
        link.to_str().unwrap(),
        sparse.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let data = d.join("hostile.data");
    std::fs::write(&data, perf_naming(&paths, 0x123)).unwrap();
    let cap = d.join("cap");
    let o = trawl_within(
        &[
            "ingest",
            data.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
        ],
        20,
    )
    .expect("ingest blocked or read without end on a hostile module path");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = sql_rows(&cap, "SELECT path, status FROM symbol_file ORDER BY path");
    for p in &paths {
        // A /dev/zero mapping is anonymous memory, as perf has it: the
        // process's JIT map path stands for it.
        let p = if p == "/dev/zero" {
            "/tmp/perf-7.map"
        } else {
            p.as_str()
        };
        let r = rows
            .iter()
            .find(|r| r[0] == p)
            .unwrap_or_else(|| panic!("{p}: {rows:?}"));
        assert_ne!(r[1], "ok", "{p} was used: {rows:?}");
    }
    // An strace dump whose stack frames name the same files.
    let dump = d.join("hostile.strace");
    std::fs::write(&dump, strace_naming(&paths, 0x123)).unwrap();
    let scap = d.join("scap");
    let o = trawl_within(
        &[
            "ingest",
            dump.to_str().unwrap(),
            "-o",
            scap.to_str().unwrap(),
        ],
        20,
    )
    .expect("ingest of an strace dump blocked or read without end on a hostile module path");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = sql_rows(&scap, "SELECT path, status FROM symbol_file ORDER BY path");
    assert_eq!(rows.len(), paths.len(), "{rows:?}");
    assert!(rows.iter().all(|r| r[1] != "ok"), "{rows:?}");
    // And the same through `trawl symbolize` again, and build-id lookups
    // (`trawl addr2line -e PATH`) of each.
    let o = trawl_within(&["symbolize", cap.to_str().unwrap()], 60).expect("symbolize blocked");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for p in &paths {
        let o = trawl_within(&["addr2line", "-e", p, "0x123"], 20)
            .unwrap_or_else(|| panic!("addr2line -e {p} blocked"));
        assert!(!o.status.success(), "addr2line -e {p} succeeded");
    }
}

/// `kill -9` at a range of moments of an ingest that replaces a capture:
/// the output is always the old capture or the new one, whole (every
/// table readable, the samples of one input only) — both outcomes must be
/// seen, an early kill's and a late one's — and the next run removes what
/// the killed ones left.
#[test]
fn killed_ingests_leave_the_old_capture_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    let (old_in, new_in) = (fixture("hot-fp.data"), fixture("procs.data"));
    let bin = fixture_bin();
    let args = |input: &Path| -> Vec<String> {
        vec![
            "ingest".into(),
            input.to_str().unwrap().into(),
            "-o".into(),
            out.to_str().unwrap().into(),
            "--debug-dir".into(),
            bin.to_str().unwrap().into(),
        ]
    };
    let want = |input: &Path| perf_script_samples(input).to_string();
    let (old_n, new_n) = (want(&old_in), want(&new_in));
    let check = |what: &str| {
        let rows = sql_rows(
            &out,
            "SELECT s.path, (SELECT count(*) FROM perf_sample) FROM source s",
        );
        assert_eq!(rows.len(), 1, "{what}: {rows:?}");
        let (path, n) = (&rows[0][0], &rows[0][1]);
        if path.ends_with("hot-fp.data") {
            assert_eq!(n, &old_n, "{what}: the old capture, not whole");
        } else {
            assert!(path.ends_with("procs.data"), "{what}: {path}");
            assert_eq!(n, &new_n, "{what}: the new capture, not whole");
        }
        // Every table opens.
        trawl_ok(&["tables", out.to_str().unwrap()]);
        path.ends_with("procs.data")
    };
    // How long a whole run takes.
    let start = std::time::Instant::now();
    let a = args(&new_in);
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    trawl_ok(&refs);
    let full = start.elapsed();
    let mut saw = (false, false);
    // Kills at 0/10 .. 11/10 of a whole run's time, then (if no kill
    // landed after the commit yet: a loaded machine runs slower than the
    // timing run) at 2, 4, 8 times it.
    let delays = (0..12u32)
        .map(|k| full * k / 10)
        .chain([2u32, 4, 8].map(|m| full * m));
    for (k, delay) in delays.enumerate() {
        if k >= 12 && saw.1 {
            break;
        }
        // The old capture in place, then a run killed k/10 of the way.
        let a = args(&old_in);
        let refs: Vec<&str> = a.iter().map(String::as_str).collect();
        trawl_ok(&refs);
        let mut child = std::process::Command::new(crate::common::trawl_exe())
            .args(args(&new_in))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        if check(&format!("killed after {delay:?} (a whole run: {full:?})")) {
            saw.1 = true;
        } else {
            saw.0 = true;
        }
    }
    assert!(
        saw.0,
        "no kill left the old capture: the kills came too late"
    );
    // A run after the kills removes their staging directories.
    let a = args(&old_in);
    let refs: Vec<&str> = a.iter().map(String::as_str).collect();
    trawl_ok(&refs);
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "cap")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(
        saw.1,
        "no kill left the new capture: even a kill after the run's end did not"
    );
}

/// Sizes read from an input do not drive allocations: perf.data headers
/// crafted to claim 2^40 bytes of attributes, of data, of every feature
/// section, or 2^40-byte attributes, give a result or an error naming the
/// file, with the peak resident memory (GNU time's %M) under 100 MB.
#[test]
fn crafted_sizes_do_not_drive_allocations() {
    let src = std::fs::read(fixture("hot-fp.data")).unwrap();
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let (data_off, data_size) = (u64_at(&src, 40), u64_at(&src, 48));
    let sec = (data_off + data_size) as usize;
    let nfeat: u32 = src[72..104].iter().map(|b| b.count_ones()).sum();
    let huge = (1u64 << 40).to_le_bytes();
    let variants: Vec<(&str, Vec<u8>)> = vec![
        ("attr_size", {
            let mut v = src.clone();
            v[16..24].copy_from_slice(&huge);
            v
        }),
        ("attrs", {
            let mut v = src.clone();
            v[32..40].copy_from_slice(&huge);
            v
        }),
        ("data", {
            let mut v = src.clone();
            v[48..56].copy_from_slice(&huge);
            v
        }),
        ("features", {
            let mut v = src.clone();
            for i in 0..nfeat as usize {
                let at = sec + 16 * i + 8;
                v[at..at + 8].copy_from_slice(&huge);
            }
            v
        }),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in variants {
        let f = dir.path().join(format!("{name}.data"));
        std::fs::write(&f, bytes).unwrap();
        let out = dir.path().join(format!("cap-{name}"));
        let (o, kb) = trawl_peak_rss(&[
            "ingest",
            f.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--no-symbolize",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(kb < 100 * 1024, "{name}: peak {kb} KB");
        if !o.status.success() {
            assert!(
                err.contains(&format!("{name}.data")),
                "{name}: the error names no file: {err}"
            );
        }
    }
}

/// A perf.data header that is all zeros after the magic (linux-perf-data
/// panicked on one: samply issue 870): refused with a message naming the
/// file, no panic.
#[test]
fn zeroed_perf_header_is_refused_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("zeroed.data");
    let mut b = b"PERFILE2".to_vec();
    b.resize(4096, 0);
    std::fs::write(&f, b).unwrap();
    let o = trawl(&[
        "ingest",
        f.to_str().unwrap(),
        "-o",
        dir.path().join("c").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("zeroed.data"), "{err}");
}

/// Every reader, not only perf.data's, meets mutated input without
/// panicking: strace dumps, each metrics format, lackey text, the binary
/// memory log, a /proc/PID/maps file, a powercap CSV and a perf.data with
/// RAPL group reads (the energy simulator's), each mutated 40 times six ways
/// (bytes flipped, cut, numbers replaced by extreme ones, a line repeated,
/// junk inserted) and ingested: `Ok` with diagnostics or an `Error`.
#[test]
fn mutated_inputs_of_every_reader_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    let root = root();
    for sub in ["fixtures/strace", "fixtures/metrics"] {
        for e in std::fs::read_dir(root.join(sub)).unwrap().flatten() {
            let p = e.path();
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_file() && !n.ends_with(".md") {
                inputs.push((n, std::fs::read(&p).unwrap()));
            }
        }
    }
    // Lackey text: the first 200 KB of the fixture's log; its binary form.
    let st = std::process::Command::new("zstd")
        .args(["-q", "-d", "-c"])
        .arg(root.join("fixtures/memlog/pages.lackey.zst"))
        .output()
        .expect("zstd");
    let text = &st.stdout[..200_000];
    let cut = text.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let lk = d.join("pages.lackey");
    std::fs::write(&lk, &text[..cut]).unwrap();
    let tm = d.join("pages.tmem");
    trawl_ok(&[
        "convert",
        "lackey",
        lk.to_str().unwrap(),
        "-o",
        tm.to_str().unwrap(),
    ]);
    inputs.push(("pages.lackey".into(), text[..cut].to_vec()));
    inputs.push(("pages.tmem".into(), std::fs::read(&tm).unwrap()));
    inputs.push((
        "pages.maps".into(),
        std::fs::read(root.join("fixtures/memlog/pages.maps")).unwrap(),
    ));
    // Energy: the simulator's perf.data (RAPL group reads) and powercap CSV,
    // one second long.
    let mut cfg = trawl_synth::rapl::SimConfig::default_model("/bin/x", &[0x1000; 6]);
    cfg.duration_ns = 1_000_000_000;
    let (perf_bytes, csv, _) = trawl_synth::rapl::simulate(&cfg);
    inputs.push(("sim.data".into(), perf_bytes));
    inputs.push(("sim-rapl.csv".into(), csv.into_bytes()));
    assert!(inputs.len() > 20, "{}", inputs.len());

    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // 40 mutations each in CI; TRAWL_MUTATION_ROUNDS=N for a longer run.
    let rounds: u32 = std::env::var("TRAWL_MUTATION_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for (name, orig) in &inputs {
        for round in 0..rounds {
            let mut b = orig.clone();
            let n = b.len().max(1);
            match round % 6 {
                0 => {
                    for _ in 0..8 {
                        let i = (rnd() as usize) % n;
                        if i < b.len() {
                            b[i] ^= 1 << (rnd() % 8);
                        }
                    }
                }
                1 => b.truncate((rnd() as usize) % n),
                2 => {
                    // A number replaced by an extreme one.
                    let digits: Vec<usize> =
                        (0..b.len()).filter(|&i| b[i].is_ascii_digit()).collect();
                    if !digits.is_empty() {
                        let i = digits[(rnd() as usize) % digits.len()];
                        let v: &[u8] = [
                            &b"99999999999999999999999"[..],
                            b"-1",
                            b"0x",
                            b"18446744073709551616",
                            b"1e308",
                            b"nan",
                        ][(rnd() % 6) as usize];
                        b.splice(i..i + 1, v.iter().copied());
                    }
                }
                3 => {
                    // A line repeated many times.
                    let i = (rnd() as usize) % n;
                    let s = b[..i.min(b.len())]
                        .iter()
                        .rposition(|&c| c == b'\n')
                        .map_or(0, |p| p + 1);
                    let e = b[s..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(b.len(), |p| s + p + 1);
                    let line = b[s..e].to_vec();
                    for _ in 0..50 {
                        b.splice(e..e, line.iter().copied());
                    }
                }
                4 => {
                    // Junk inserted: random bytes, a long line, NULs.
                    let i = (rnd() as usize) % n;
                    let junk: Vec<u8> = match rnd() % 3 {
                        0 => (0..64).map(|_| rnd() as u8).collect(),
                        1 => vec![b'7'; 100_000],
                        _ => vec![0; 4096],
                    };
                    let i = i.min(b.len());
                    b.splice(i..i, junk);
                }
                _ => {
                    // A u64 overwritten with an extreme value (binary sizes).
                    if b.len() > 16 {
                        let i = ((rnd() as usize) % (b.len() - 8)) & !7;
                        let v = [u64::MAX, 0, 1 << 63, u32::MAX as u64][(rnd() % 4) as usize];
                        b[i..i + 8].copy_from_slice(&v.to_le_bytes());
                    }
                }
            }
            let p = d.join(format!("m{round}-{name}"));
            std::fs::write(&p, &b).unwrap();
            let out = d.join(format!("c{round}-{name}"));
            let _ = run(&p, &out, false);
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_file(&p);
        }
    }
}

/// Runs `trawl ARGS` under GNU time: its output and peak RSS in KB.
fn trawl_peak_rss(args: &[&str]) -> (std::process::Output, u64) {
    let o = std::process::Command::new("/usr/bin/time")
        .args(["-f", "maxrss=%M"])
        .arg(crate::common::trawl_exe())
        .args(args)
        .output()
        .expect("GNU time (apt-get install time)");
    let err = String::from_utf8_lossy(&o.stderr);
    let kb = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss="))
        .unwrap_or_else(|| panic!("{err}"))
        .trim()
        .parse()
        .unwrap();
    (o, kb)
}

/// A decompression bomb: `head` then `line` repeated to `total` bytes,
/// compressed with the `tool` (gzip -9 or zstd -19) as one member of
/// 16 MiB and copies of a member of `line`s alone (gzip and zstd readers
/// read concatenated members/frames as one stream).
fn bomb(dir: &Path, tool: &str, head: &[u8], line: &[u8], total: u64) -> (PathBuf, u64) {
    let member = |name: &str, with_head: bool| -> (Vec<u8>, u64) {
        let mut text = Vec::with_capacity(16 << 20);
        if with_head {
            text.extend_from_slice(head);
        }
        while text.len() + line.len() <= 16 << 20 {
            text.extend_from_slice(line);
        }
        let p = dir.join(name);
        std::fs::write(&p, &text).unwrap();
        let level = if tool == "gzip" { "-9" } else { "-19" };
        let o = std::process::Command::new(tool)
            .args([level, "-q", "-c"])
            .arg(&p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{tool}");
        std::fs::remove_file(&p).unwrap();
        (o.stdout, text.len() as u64)
    };
    let (mut out, mut text) = member("first", true);
    let (rest, rest_text) = member("rest", false);
    for _ in 0..(total >> 24) - 1 {
        out.extend_from_slice(&rest);
        text += rest_text;
    }
    let p = dir.join(format!("bomb-{}.{tool}", total >> 20));
    std::fs::write(&p, &out).unwrap();
    (p, text)
}

/// A zstd bomb of lackey text (4 GiB from 13 KB) and a gzip bomb of vmstat
/// lines (1 GiB from 3.6 MB; vmstat is read whole) stop
/// at the expansion limit (64 MiB, then 200× the compressed bytes read):
/// peak RSS well under what reading them whole would take, a
/// `decompression_limit` diagnostic, the rows before the limit kept (at
/// least the first 64 MiB's, by hand: 16 bytes a lackey line, 103 a vmstat
/// line), `--strict` fails naming the file, and `--max-expansion` moves the
/// limit.
#[test]
fn decompression_bombs_stop_at_the_expansion_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lk = std::process::Command::new("zstd")
        .args(["-q", "-d", "-c"])
        .arg(root().join("fixtures/memlog/pages.lackey.zst"))
        .output()
        .unwrap()
        .stdout;
    // The valgrind preamble and first records, whole lines.
    let cut = lk[..20_000].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let (lackey, _) = bomb(d, "zstd", &lk[..cut], b" L 1ffefff000,8\n", 4 << 30);
    let vm = std::fs::read(root().join("fixtures/metrics/vmstat.log")).unwrap();
    let head: Vec<u8> = vm
        .split_inclusive(|&b| b == b'\n')
        .take(3)
        .flatten()
        .copied()
        .collect();
    let line = vm.split_inclusive(|&b| b == b'\n').nth(3).unwrap();
    let (vmstat, _) = bomb(d, "gzip", &head, line, 1 << 30);
    for (bomb, table, head_len, line_len, compressed) in [
        (&lackey, "mem_access", cut as u64, 16u64, "zstd"),
        (
            &vmstat,
            "metric",
            head.len() as u64,
            line.len() as u64,
            "gzip",
        ),
    ] {
        // At least 250× smaller than what it expands to.
        let size = std::fs::metadata(bomb).unwrap().len();
        assert!(size < 4 << 20, "{size}");
        let out = d.join(format!("cap-{compressed}"));
        let (o, kb) = trawl_peak_rss(&[
            "ingest",
            bomb.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--no-symbolize",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(kb < 400 * 1024, "{compressed}: peak {kb} KB");
        let diags = diagnostics(&out);
        let limit: Vec<_> = diags
            .iter()
            .filter(|(_, k, _)| k == "decompression_limit")
            .collect();
        assert_eq!(limit.len(), 1, "{diags:?}");
        assert!(limit[0].2.contains(compressed), "{:?}", limit[0]);
        let rows: u64 = sql_scalar(&out, &format!("SELECT count(*) FROM {table}"))
            .parse()
            .unwrap();
        // Rows of at least the first 64 MiB (the repeated lines in it, but
        // for a cut last one), far fewer than the bomb's.
        let lines_64m = ((64 << 20) - head_len) / line_len - 1;
        let lines_all = if compressed == "zstd" {
            4u64 << 30
        } else {
            1 << 30
        } / line_len;
        if table == "mem_access" {
            assert!(rows >= lines_64m && rows < lines_all / 4, "{rows}");
        } else {
            // vmstat: 17 metrics a line.
            assert!(
                rows >= 17 * lines_64m && rows < 17 * lines_all / 4,
                "{rows}"
            );
        }
        // --strict: a failure naming the file; the output not written.
        let strict_out = d.join(format!("strict-{compressed}"));
        let o = trawl(&[
            "ingest",
            bomb.to_str().unwrap(),
            "-o",
            strict_out.to_str().unwrap(),
            "--no-symbolize",
            "--strict",
        ]);
        assert_refused(&o, "past the limit");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(bomb.file_name().unwrap().to_str().unwrap()),
            "{err}"
        );
        assert!(err.contains("decompression_limit"), "{err}");
        assert!(!strict_out.exists());
    }
    // --max-expansion 0 lifts the limit: an 80 MiB lackey bomb read to
    // its end (fetches only kept, for speed: every byte is still parsed).
    let (small, text) = bomb(d, "zstd", &lk[..cut], b" L 1ffefff000,8\n", 80 << 20);
    let out = d.join("cap-unlimited");
    trawl_ok(&[
        "ingest",
        small.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--no-symbolize",
        "--mem-kinds",
        "I",
        "--max-expansion",
        "0",
    ]);
    assert!(diagnostics(&out)
        .iter()
        .all(|(_, k, _)| k != "decompression_limit"));
    assert_eq!(
        sql_scalar(&out, "SELECT size_bytes FROM source"),
        text.to_string()
    );
}

/// With `--sysroot` or `--remap-path`, nothing outside the given roots is
/// opened: each root is resolved as its own `/` (openat2 RESOLVE_IN_ROOT).
/// A sysroot holding the program, an absolute symbolic link to a program
/// outside it, a relative link climbing out of it, and an absolute link to
/// the program inside it; a perf.data and an strace dump whose modules are
/// these, a path climbing out with `..`, and the outside program's own
/// path (which exists on this machine). Only the program inside (by name
/// and through the in-root link) is used, from inside the root; a trace of
/// trawl's file system calls (strace) shows the outside program never
/// opened; without confinement the same capture does use the outside file
/// (the test can fail).
#[test]
fn sysroot_and_remap_open_nothing_outside_their_roots() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let root = d.join("root");
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::create_dir_all(root.join("usr/lib")).unwrap();
    std::fs::copy(fixture_bin().join("hot"), root.join("usr/bin/app")).unwrap();
    let outside = d.join("host/outside-bin");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::copy(fixture_bin().join("calls"), &outside).unwrap();
    let o = outside.to_str().unwrap().to_string();
    std::os::unix::fs::symlink(&outside, root.join("lib/libabs.so")).unwrap();
    std::os::unix::fs::symlink(
        format!("../../../../../../../../../..{o}"),
        root.join("lib/librel.so"),
    )
    .unwrap();
    std::os::unix::fs::symlink("/usr/bin/app", root.join("usr/lib/libchain.so")).unwrap();
    let climb = format!("/usr/../../../../../../../..{o}");
    // (module path, used?, where it is read from)
    let modules: Vec<(String, bool, Option<PathBuf>)> = vec![
        ("/usr/bin/app".into(), true, Some(root.join("usr/bin/app"))),
        ("/lib/libabs.so".into(), false, None),
        ("/lib/librel.so".into(), false, None),
        (
            "/usr/lib/libchain.so".into(),
            true,
            Some(root.join("usr/lib/libchain.so")),
        ),
        (climb.clone(), false, None),
        (o.clone(), false, None),
    ];
    // A function of hot at file offset 0x1130 (spin_a: perf's own
    // symbolization in the symbols tests), of calls somewhere in .text.
    let names: Vec<String> = modules.iter().map(|m| m.0.clone()).collect();
    let data = d.join("c.data");
    std::fs::write(&data, perf_naming(&names, 0x1130)).unwrap();
    let dump = d.join("c.strace");
    std::fs::write(&dump, strace_naming(&names, 0x1130)).unwrap();

    let status = |cap: &Path| -> Vec<Vec<String>> {
        sql_rows(
            cap,
            "SELECT path, status, coalesce(binary, '') FROM symbol_file ORDER BY path",
        )
    };
    let check = |cap: &Path, mods: &[(String, bool, Option<PathBuf>)]| {
        let rows = status(cap);
        for (p, used, from) in mods {
            let r = rows
                .iter()
                .find(|r| &r[0] == p)
                .unwrap_or_else(|| panic!("{p}: {rows:?}"));
            assert_eq!(r[1] == "ok", *used, "{p}: {rows:?}");
            if let Some(f) = from {
                assert_eq!(Path::new(&r[2]), f.as_path(), "{p}: {rows:?}");
            }
        }
    };
    for input in [&data, &dump] {
        let cap = d.join(format!(
            "cap-{}",
            input.extension().unwrap().to_str().unwrap()
        ));
        let log = d.join("files.log");
        let run = std::process::Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=%file", "-o"])
            .arg(&log)
            .arg(crate::common::trawl_exe())
            .args([
                "ingest",
                input.to_str().unwrap(),
                "-o",
                cap.to_str().unwrap(),
                "--sysroot",
            ])
            .arg(&root)
            .output()
            .expect("strace");
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        check(&cap, &modules);
        // No open or stat of the outside program by name: not its recorded
        // path, not the path climbing out (those go to openat2 relative to
        // the root, which resolves them inside it).
        let calls = std::fs::read_to_string(&log).unwrap();
        let bad: Vec<&str> = calls
            .lines()
            .filter(|l| {
                l.contains(&format!("\"{o}\""))
                    || l.contains(&format!("\"{}{climb}\"", root.display()))
            })
            .collect();
        assert!(bad.is_empty(), "{bad:?}");
        assert!(calls.contains("openat2("), "no openat2 in the trace");
    }

    // --remap-path: the prefix's files inside its target only.
    let moved = d.join("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::copy(fixture_bin().join("hot"), moved.join("prog")).unwrap();
    std::os::unix::fs::symlink(&outside, moved.join("escape")).unwrap();
    let remapped: Vec<(String, bool, Option<PathBuf>)> = vec![
        ("/opt/x/prog".into(), true, Some(moved.join("prog"))),
        ("/opt/x/escape".into(), false, None),
        (format!("/opt/x/../../../../../../..{o}"), false, None),
        (o.clone(), false, None),
    ];
    let names: Vec<String> = remapped.iter().map(|m| m.0.clone()).collect();
    let data2 = d.join("r.data");
    std::fs::write(&data2, perf_naming(&names, 0x1130)).unwrap();
    let cap = d.join("cap-remap");
    trawl_ok(&[
        "ingest",
        data2.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
        "--remap-path",
        &format!("/opt/x={}", moved.display()),
    ]);
    check(&cap, &remapped);

    // Without confinement the outside program at its recorded path is
    // used: the checks above can fail.
    let cap = d.join("cap-open");
    trawl_ok(&[
        "ingest",
        data.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    let rows = status(&cap);
    assert!(rows.iter().any(|r| r[0] == o && r[1] == "ok"), "{rows:?}");
}

/// A full disk (a 400 KiB tmpfs, mounted in a mount namespace of the
/// test's own: `unshare -rm`): an ingest that does not fit fails with an
/// error naming the file it was writing and the cause, leaves no staging
/// directory, and the previous capture is intact (its samples = the first
/// ingest's, 570 as perf script counts them, byte for byte the same files);
/// `trawl symbolize` on the full disk fails the same way and changes
/// nothing; with room again it succeeds.
#[test]
fn a_full_disk_fails_naming_the_path_and_keeps_the_old_capture() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mnt = d.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let script = d.join("full.sh");
    std::fs::write(
        &script,
        r#"set -u
D=$1; T=$2; FX=$3
mount -t tmpfs -o size=400k tmpfs "$D" || exit 90
"$T" ingest "$FX/perf/hot-z.data" -o "$D/cap" --no-symbolize >/dev/null 2>&1 || exit 91
sum() { (cd "$D/cap" && sha256sum * | sha256sum); }
before=$(sum)
echo "== ingest"
"$T" ingest "$FX/memlog/pages.lackey.zst" -o "$D/cap" --no-symbolize --fetch-rows 2>&1
echo "rc=$?"
echo "== left"; ls -A "$D"
echo "== same $([ "$(sum)" = "$before" ] && echo yes || echo no)"
echo "== samples $("$T" sql "$D/cap" 'SELECT count(*) AS n FROM perf_sample' --format csv | tail -1)"
avail=$(df --output=avail -B1 "$D" | tail -1)
head -c $((avail - 8192)) /dev/zero > "$D/fill" 2>/dev/null
echo "== symbolize"
"$T" symbolize "$D/cap" --debug-dir "$FX/perf/bin" 2>&1
echo "rc=$?"
echo "== same $([ "$(sum)" = "$before" ] && echo yes || echo no)"
rm "$D/fill"
echo "== left"; ls -A "$D"
echo "== symbolize"
"$T" symbolize "$D/cap" --debug-dir "$FX/perf/bin" 2>&1
echo "rc=$?"
echo "== functions $("$T" sql "$D/cap" "SELECT count(DISTINCT function) AS n FROM frame_name WHERE function IN ('spin_a', 'spin_b')" --format csv | tail -1)"
"#,
    )
    .unwrap();
    let o = std::process::Command::new("unshare")
        .args(["-r", "-m", "sh"])
        .arg(&script)
        .arg(&mnt)
        .arg(crate::common::trawl_exe())
        .arg(root().join("fixtures"))
        .output()
        .expect("unshare (util-linux)");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let sections: Vec<&str> = out.split("== ").skip(1).collect();
    assert_eq!(sections.len(), 9, "{out}");
    // The ingest that did not fit.
    let ing = sections[0];
    assert!(ing.contains("rc=1"), "{out}");
    assert!(ing.contains("No space left on device"), "{out}");
    assert!(
        ing.contains(&format!("{}/.cap.trawl-tmp-", mnt.display())),
        "{out}"
    );
    assert!(ing.contains(".parquet"), "{out}");
    assert_eq!(sections[1].trim(), "left\ncap", "{out}");
    assert_eq!(sections[2].trim(), "same yes", "{out}");
    assert_eq!(sections[3].trim(), "samples 570", "{out}");
    // symbolize on the full disk.
    let sym = sections[4];
    assert!(
        sym.contains("rc=1") && sym.contains("No space left on device"),
        "{out}"
    );
    assert_eq!(sections[5].trim(), "same yes", "{out}");
    assert_eq!(sections[6].trim(), "left\ncap", "{out}");
    assert!(sections[7].contains("rc=0"), "{out}");
    assert_eq!(sections[8].trim(), "functions 2", "{out}");
}

/// Four ingests of different perf.data files into one output at once, in
/// rounds that start with the output absent and present: every run
/// succeeds, and the output is exactly one of them, whole: its `source`
/// names one input and its sample count is that input's (perf script's
/// count); no staging directory is left.
#[test]
fn concurrent_ingests_into_one_output_do_not_mix() {
    let inputs = ["hot-fp.data", "procs.data", "threads.data", "hot-z.data"];
    let expected: Vec<(String, usize)> = inputs
        .iter()
        .map(|n| {
            let p = fixture(n);
            (p.to_str().unwrap().to_string(), perf_script_samples(&p))
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    for round in 0..6 {
        if round % 2 == 0 {
            let _ = std::fs::remove_dir_all(&out);
        }
        let children: Vec<_> = expected
            .iter()
            .map(|(p, _)| {
                std::process::Command::new(crate::common::trawl_exe())
                    .args(["ingest", p, "-o", out.to_str().unwrap(), "--no-symbolize"])
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let src = sql_rows(&out, "SELECT path FROM source");
        assert_eq!(src.len(), 1, "round {round}: {src:?}");
        let (_, n) = expected
            .iter()
            .find(|(p, _)| *p == src[0][0])
            .unwrap_or_else(|| panic!("round {round}: {src:?}"));
        assert_eq!(
            count_samples(&out),
            *n as u64,
            "round {round}: {}",
            src[0][0]
        );
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["cap".to_string()], "round {round}");
    }
}

/// An strace dump on standard input with a 256 MiB line between two calls
/// (no newline for 256 MiB: a broken or hostile stream): the line is cut
/// at 64 MiB and skipped (a diagnostic at line 2), peak RSS stays under
/// 200 MB (GNU time), both calls are kept.
#[test]
fn a_huge_line_on_a_stream_is_cut_not_held() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let script = format!(
        "(echo '7 1795330737.600000 getpid() = 7 <0.000001>'; head -c 268435456 /dev/zero | tr '\\0' a; echo; \
         echo '7 1795330737.700000 getppid() = 1 <0.000001>') | /usr/bin/time -f maxrss=%M {} ingest - -o {} --no-symbolize",
        crate::common::trawl_exe().display(),
        cap.display()
    );
    let o = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let kb: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss="))
        .unwrap_or_else(|| panic!("{err}"))
        .trim()
        .parse()
        .unwrap();
    assert!(kb < 200 * 1024, "peak {kb} KB");
    assert_eq!(
        sql_rows(&cap, "SELECT name FROM syscall ORDER BY time_ns"),
        vec![vec!["getpid".to_string()], vec!["getppid".to_string()]]
    );
    // The cut line is a diagnostic at its line.
    assert_eq!(sql_scalar(&cap, "SELECT min(line) FROM diagnostic"), "2");
}
