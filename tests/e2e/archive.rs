//! `trawl archive ingest`: runs into an archive of captures (Hive-style
//! `capture=NAME` directories and a manifest), incrementally, with failures
//! recorded, and queried as one dataset. Sample counts come from perf
//! script on the same files; an archive's answers are compared with the
//! same report on each capture alone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

pub(crate) fn archive_ingest(src: &Path, arch: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "archive",
        "ingest",
        src.to_str().unwrap(),
        "-o",
        arch.to_str().unwrap(),
        "--debug-dir",
    ];
    let bin = fixture_bin();
    args.push(bin.to_str().unwrap());
    args.extend_from_slice(extra);
    trawl(&args)
}

fn ok(o: std::process::Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A source tree of two runs and a loose recording, plus a file that is
/// no input: run1 (hot-fp.data, io.strace), run2 (threads.data), and
/// recurse.data directly in the source directory (a capture named by it).
pub(crate) fn runs(root: &Path) -> PathBuf {
    let src = root.join("nightly");
    for d in ["run1", "run2"] {
        std::fs::create_dir_all(src.join(d)).unwrap();
    }
    let cp = |from: PathBuf, to: PathBuf| {
        std::fs::copy(from, to).unwrap();
    };
    cp(fixture("hot-fp.data"), src.join("run1/hot-fp.data"));
    cp(
        root_dir().join("fixtures/strace/io.strace"),
        src.join("run1/io.strace"),
    );
    cp(fixture("threads.data"), src.join("run2/threads.data"));
    cp(fixture("recurse.data"), src.join("recurse.data"));
    std::fs::write(src.join("README"), "not an input\n").unwrap();
    src
}

/// Samples per capture of `runs`: perf script's count of each recording.
pub(crate) fn runs_samples() -> BTreeMap<String, usize> {
    [
        ("nightly", "recurse.data"),
        ("run1", "hot-fp.data"),
        ("run2", "threads.data"),
    ]
    .into_iter()
    .map(|(c, f)| (c.to_string(), perf_script_samples(&fixture(f))))
    .collect()
}

fn root_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn samples_by_capture(arch: &Path) -> BTreeMap<String, usize> {
    sql_rows(
        arch,
        "SELECT capture, count(*) FROM perf_sample GROUP BY capture",
    )
    .into_iter()
    .map(|r| (r[0].clone(), r[1].parse().unwrap()))
    .collect()
}

#[test]
fn runs_become_captures_read_as_one_dataset() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let arch = t.path().join("arch");
    let err = ok(archive_ingest(&src, &arch, &[]));
    assert!(
        err.contains("3 captures ingested, 0 unchanged, 0 failed"),
        "{err}"
    );
    assert!(err.contains("skipped") && err.contains("README"), "{err}");
    // One segment holds the three captures (no directory of their own).
    let segs = sql_rows(&arch, "SELECT DISTINCT segment FROM capture");
    assert_eq!(segs.len(), 1, "{segs:?}");
    assert!(arch.join(format!("segment={}", segs[0][0])).is_dir());
    for n in ["nightly", "run1", "run2"] {
        assert!(!arch.join(format!("capture={n}")).exists(), "{n}");
    }
    let want = runs_samples();
    assert_eq!(samples_by_capture(&arch), want);
    // The manifest: a row per capture, its inputs with sizes and hashes.
    let rows = sql_rows(
        &arch,
        "SELECT capture, status, inputs, input_bytes, schema_version, trawl_version FROM capture ORDER BY capture",
    );
    let size = |p: &str| std::fs::metadata(src.join(p)).unwrap().len();
    assert_eq!(
        rows,
        vec![
            vec![
                "nightly".into(),
                "ok".into(),
                "1".into(),
                size("recurse.data").to_string(),
                "1".into(),
                env!("CARGO_PKG_VERSION").into()
            ],
            vec![
                "run1".into(),
                "ok".into(),
                "2".into(),
                (size("run1/hot-fp.data") + size("run1/io.strace")).to_string(),
                "1".into(),
                env!("CARGO_PKG_VERSION").into()
            ],
            vec![
                "run2".into(),
                "ok".into(),
                "1".into(),
                size("run2/threads.data").to_string(),
                "1".into(),
                env!("CARGO_PKG_VERSION").into()
            ],
        ]
    );
    let inputs = sql_rows(
        &arch,
        "SELECT capture, size_bytes, length(blake3) FROM capture_input ORDER BY capture, path",
    );
    assert_eq!(inputs.len(), 4);
    assert!(inputs.iter().all(|r| r[2] == "64"), "{inputs:?}");
    // The strace dump of run1 is in run1: its system calls are those of
    // the dump ingested alone.
    let alone = t.path().join("io");
    ingest_file(&src.join("run1/io.strace"), &alone, &["--no-symbolize"]);
    assert_eq!(
        sql_scalar(&arch, "SELECT count(*) FROM syscall WHERE capture = 'run1'"),
        sql_scalar(&alone, "SELECT count(*) FROM syscall")
    );
    // Hotspots over the archive are the sums of each capture's, and a
    // capture's are those of its recording ingested alone (the segment's
    // shared modules, frames and stacks name its frames as its own did).
    let hot = |cap: &Path, only: &[&str]| -> BTreeMap<(String, String), (i64, i64)> {
        let mut args = vec!["--no-inline"];
        for c in only {
            args.extend(["--capture", c]);
        }
        csv_maps(&report_csv("hotspots", cap, &args))
            .into_iter()
            .map(|m| {
                (
                    (m["function"].clone(), m["module"].clone()),
                    (
                        m["self_samples"].parse().unwrap(),
                        m["total_samples"].parse().unwrap(),
                    ),
                )
            })
            .collect()
    };
    let mut sum: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
    for n in ["nightly", "run1", "run2"] {
        for (k, (s, tot)) in hot(&arch, &[n]) {
            let e = sum.entry(k).or_default();
            e.0 += s;
            e.1 += tot;
        }
    }
    assert_eq!(hot(&arch, &[]), sum);
    let run2 = t.path().join("run2-alone");
    ingest_file(&src.join("run2/threads.data"), &run2, &[]);
    assert_eq!(hot(&arch, &["run2"]), hot(&run2, &[]));
}

#[test]
fn reruns_skip_unchanged_captures_and_replace_changed_ones() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let arch = t.path().join("arch");
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    let seg_of = |n: &str| {
        sql_scalar(
            &arch,
            &format!("SELECT segment FROM capture WHERE capture = '{n}'"),
        )
    };
    let mtime = |n: &str| {
        std::fs::metadata(arch.join(format!("segment={}/source.parquet", seg_of(n))))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before = (mtime("run1"), mtime("run2"));
    let err = ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    assert!(err.contains("0 captures ingested, 3 unchanged"), "{err}");
    assert_eq!((mtime("run1"), mtime("run2")), before);
    // A source tree moved elsewhere (same name) is the same content.
    std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
    let moved = t.path().join("elsewhere/nightly");
    std::fs::rename(&src, &moved).unwrap();
    let err = ok(archive_ingest(&moved, &arch, &["--no-symbolize"]));
    assert!(err.contains("0 captures ingested, 3 unchanged"), "{err}");
    // run2's recording replaced by another: only run2 is ingested again
    // (into a new segment; the old one keeps run1's and nightly's rows),
    // and has the new recording's samples (its old rows are not read).
    let old = seg_of("run2");
    std::fs::copy(fixture("procs.data"), moved.join("run2/threads.data")).unwrap();
    let err = ok(archive_ingest(&moved, &arch, &["--no-symbolize"]));
    assert!(err.contains("1 captures ingested, 2 unchanged"), "{err}");
    assert_eq!(mtime("run1"), before.0);
    assert_ne!(seg_of("run2"), old);
    assert_eq!(seg_of("run1"), old);
    let got = samples_by_capture(&arch);
    assert_eq!(got["run2"], perf_script_samples(&fixture("procs.data")));
    assert_eq!(got["run1"], perf_script_samples(&fixture("hot-fp.data")));
    assert_eq!(
        sql_scalar(&arch, "SELECT count(*) FROM capture"),
        "3".to_string()
    );
    // An input rewritten in place with its size and modification time
    // kept (same inode) is taken as unchanged without being read, as make
    // and rsync take it; --rehash reads every input and finds the change.
    let strace = moved.join("run1/io.strace");
    let when = std::fs::metadata(&strace).unwrap().modified().unwrap();
    let text = std::fs::read_to_string(&strace).unwrap();
    let edited = text.replacen("brk(NULL)", "brk(NULL)".to_uppercase().as_str(), 1);
    assert_eq!(edited.len(), text.len());
    assert_ne!(edited, text);
    std::fs::write(&strace, &edited).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&strace)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let err = ok(archive_ingest(&moved, &arch, &["--no-symbolize"]));
    assert!(err.contains("0 captures ingested, 3 unchanged"), "{err}");
    let err = ok(archive_ingest(
        &moved,
        &arch,
        &["--no-symbolize", "--rehash"],
    ));
    assert!(err.contains("1 captures ingested, 2 unchanged"), "{err}");
    assert_ne!(mtime("run1"), before.0);
    // The run's hashes record the file as it is now: unchanged after.
    let err = ok(archive_ingest(&moved, &arch, &["--no-symbolize"]));
    assert!(err.contains("0 captures ingested, 3 unchanged"), "{err}");
    // A recorded input (whose format a rerun does not read while it is
    // unchanged) overwritten with text trawl does not read: skipped and
    // said so, its capture ingested again from its other input.
    std::fs::write(&strace, "notes, not a trace\n").unwrap();
    let err = ok(archive_ingest(&moved, &arch, &["--no-symbolize"]));
    assert!(err.contains("1 captures ingested, 2 unchanged"), "{err}");
    assert!(err.contains("run1/io.strace"), "{err}");
    assert_eq!(
        sql_scalar(&arch, "SELECT inputs FROM capture WHERE capture = 'run1'"),
        "1"
    );
    assert_eq!(
        samples_by_capture(&arch)["run1"],
        perf_script_samples(&fixture("hot-fp.data"))
    );
}

#[test]
fn failed_captures_are_recorded_and_strict_stops() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    // A perf.data whose header points past its end: ingest fails.
    let head = std::fs::read(fixture("hot-fp.data")).unwrap();
    let mut bad = head[..8].to_vec();
    bad.extend(std::iter::repeat_n(0xff, 200));
    std::fs::create_dir_all(src.join("broken")).unwrap();
    std::fs::write(src.join("broken/bad.data"), bad).unwrap();
    let arch = t.path().join("arch");
    let err = ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    assert!(
        err.contains("3 captures ingested, 0 unchanged, 1 failed"),
        "{err}"
    );
    assert!(err.contains("capture broken failed"), "{err}");
    let rows = sql_rows(
        &arch,
        "SELECT status, message LIKE '%bad.data%beyond the end%' FROM capture WHERE capture = 'broken'",
    );
    assert_eq!(rows, vec![vec!["failed".to_string(), "true".to_string()]]);
    assert!(!arch.join("capture=broken").exists());
    // Unchanged failed inputs are not tried again, unless asked; --strict
    // makes the failure fail the run.
    let err = ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    assert!(
        err.contains("0 captures ingested, 3 unchanged, 1 failed"),
        "{err}"
    );
    let o = archive_ingest(
        &src,
        &arch,
        &["--no-symbolize", "--strict", "--retry-failed"],
    );
    assert_refused(&o, "strict: capture broken");
    assert!(String::from_utf8_lossy(&o.stderr).contains("strict: capture broken"));
}

#[test]
fn a_killed_run_exposes_no_partial_capture_and_the_next_one_finishes() {
    // What kill -9 leaves: a capture being staged (half its tables) and a
    // segment renamed into place before the manifest was rewritten.
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let arch = t.path().join("arch");
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    let seg = sql_scalar(&arch, "SELECT min(segment) FROM capture");
    let staged = arch.join(".staging/captures/0/.trawl-tmp-999999");
    std::fs::create_dir_all(&staged).unwrap();
    for f in ["source.parquet", "perf_sample.parquet"] {
        std::fs::copy(arch.join(format!("segment={seg}")).join(f), staged.join(f)).unwrap();
    }
    std::fs::create_dir_all(src.join("run3")).unwrap();
    std::fs::copy(fixture("hot-fp.data"), src.join("run3/hot-fp.data")).unwrap();
    let orphan = arch.join("segment=9999999999999-0001");
    let mut cp = std::process::Command::new("cp");
    cp.args(["-r"])
        .arg(arch.join(format!("segment={seg}")))
        .arg(&orphan);
    assert!(cp.status().unwrap().success());
    // Readers read what the manifest names: neither the staging directory
    // nor the unrecorded segment (nothing twice).
    assert_eq!(samples_by_capture(&arch), runs_samples());
    // The next run removes both, ingests run3, and nothing is duplicated.
    let err = ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    assert!(err.contains("1 captures ingested, 3 unchanged"), "{err}");
    assert!(!arch.join(".staging").exists());
    assert!(!orphan.exists());
    let n = perf_script_samples(&fixture("hot-fp.data"));
    assert_eq!(samples_by_capture(&arch)["run3"], n);
    assert_eq!(samples_by_capture(&arch)["run1"], n);
    assert_eq!(sql_scalar(&arch, "SELECT count(*) FROM capture"), "4");
}

/// Rewrites `table` of capture `dir` with `f` applied to its schema and
/// columns (what an earlier or later trawl would have written).
fn rewrite_table(
    dir: &Path,
    table: &str,
    f: impl Fn(
        &trawl_ingest::arrow::record_batch::RecordBatch,
    ) -> trawl_ingest::arrow::record_batch::RecordBatch,
) {
    use trawl_ingest::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use trawl_ingest::parquet::arrow::ArrowWriter;
    let path = dir.join(format!("{table}.parquet"));
    let file = std::fs::File::open(&path).unwrap();
    let batches: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| f(&b.unwrap()))
        .collect();
    let out = std::fs::File::create(&path).unwrap();
    let mut w = ArrowWriter::try_new(out, batches[0].schema(), None).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
}

#[test]
fn captures_of_earlier_schemas_are_read() {
    // fixtures/captures/v1-hot-fp was written by trawl at schema version 1
    // (its README): it answers as a fresh ingest of the same recording.
    let old = root_dir().join("fixtures/captures/v1-hot-fp");
    // Kernel frames unnamed, as in the old capture (written where the
    // running kernel was not the recorded one): an empty --kallsyms.
    let (_t, fresh) = {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("cap");
        let none = dir.path().join("kallsyms");
        std::fs::write(&none, "").unwrap();
        ingest_file(
            &fixture("hot-fp.data"),
            &fresh,
            &[
                "--debug-dir",
                fixture_bin().to_str().unwrap(),
                "--kallsyms",
                none.to_str().unwrap(),
            ],
        );
        (dir, fresh)
    };
    for extra in [&[][..], &["--by", "srcline"][..]] {
        assert_eq!(
            report_csv("hotspots", &old, extra),
            report_csv("hotspots", &fresh, extra)
        );
    }
    // A column added after a capture was written reads as null.
    let t = tempfile::tempdir().unwrap();
    let cap = t.path().join("cap");
    let mut cp = std::process::Command::new("cp");
    assert!(cp.arg("-r").arg(&old).arg(&cap).status().unwrap().success());
    rewrite_table(&cap, "perf_sample", |b| {
        let i = b.schema().index_of("cgroup").unwrap();
        let mut b = b.clone();
        b.remove_column(i);
        b
    });
    let n = perf_script_samples(&fixture("hot-fp.data"));
    assert_eq!(
        sql_rows(&cap, "SELECT count(*), count(cgroup) FROM perf_sample"),
        vec![vec![n.to_string(), "0".to_string()]]
    );
    assert_eq!(
        report_csv("hotspots", &cap, &[]),
        report_csv("hotspots", &fresh, &[])
    );
}

#[test]
fn a_capture_of_a_newer_schema_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let cap = t.path().join("cap");
    let mut cp = std::process::Command::new("cp");
    let old = root_dir().join("fixtures/captures/v1-hot-fp");
    assert!(cp.arg("-r").arg(&old).arg(&cap).status().unwrap().success());
    rewrite_table(&cap, "source", |b| {
        let mut meta = b.schema().metadata().clone();
        meta.insert("trawl.schema_version".into(), "99".into());
        let schema = std::sync::Arc::new(b.schema().as_ref().clone().with_metadata(meta));
        b.clone().with_schema(schema).unwrap()
    });
    let o = trawl(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT count(*) FROM perf_sample",
    ]);
    assert_refused(&o, "written by a newer trawl");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("schema version 99") && err.contains("reads up to 1"),
        "{err}"
    );
    // In an archive the manifest states each capture's version (no footer
    // is read): a capture it says is newer is refused too.
    let src = runs(t.path());
    let arch = t.path().join("arch");
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    rewrite_table(&arch, "capture", |b| {
        use trawl_ingest::arrow::array::{Array, Int32Array};
        let i = b.schema().index_of("schema_version").unwrap();
        let n = b.column(i).len();
        let mut cols = b.columns().to_vec();
        cols[i] = std::sync::Arc::new(Int32Array::from(vec![99; n]));
        trawl_ingest::arrow::record_batch::RecordBatch::try_new(b.schema(), cols).unwrap()
    });
    let o = trawl(&[
        "sql",
        arch.to_str().unwrap(),
        "SELECT count(*) FROM perf_sample",
    ]);
    assert_refused(&o, "written by a newer trawl");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("schema version 99"), "{err}");
}

#[test]
fn filters_on_capture_open_only_its_files() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let arch = t.path().join("arch");
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    let plan = |q: &str| -> String {
        sql_rows(&arch, &format!("EXPLAIN {q}"))
            .into_iter()
            .map(|r| r.join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // The scan of the segment's file reads only the capture's rows (the
    // range the manifest gives them): the filter on `capture` above it
    // (kept for plans sent to a cluster) finds nothing else to drop,
    // though the file holds three captures.
    let scanned = |q: &str| {
        let p = plan(&format!("ANALYZE {q}"));
        let filter = p
            .lines()
            .find(|l| l.contains("FilterExec: capture@"))
            .unwrap_or_else(|| panic!("{p}"))
            .to_string();
        assert!(filter.contains("selectivity=100%"), "{p}");
        assert!(p.contains("/perf_sample.parquet"), "{p}");
    };
    let want = runs_samples();
    scanned("SELECT count(*) FROM perf_sample WHERE capture = 'run1'");
    scanned("SELECT count(*) FROM perf_sample WHERE capture IN ('run1', 'run2')");
    assert_eq!(
        sql_scalar(
            &arch,
            "SELECT count(*) FROM perf_sample WHERE capture = 'run1'"
        ),
        want["run1"].to_string()
    );
    assert_eq!(
        sql_scalar(
            &arch,
            "SELECT count(*) FROM perf_sample WHERE capture IN ('run1', 'run2')"
        ),
        (want["run1"] + want["run2"]).to_string()
    );
    // An analysis's `capture` argument answers as the report on the
    // capture alone.
    let q = "SELECT function, module, self_samples, total_samples \
             FROM hotspots('function', 'capture', 'run2', 'inline', false)";
    let mut got = sql_rows(&arch, q);
    got.sort();
    let alone = t.path().join("run2-alone");
    ingest_file(&src.join("run2/threads.data"), &alone, &["--no-symbolize"]);
    let mut want: Vec<Vec<String>> = csv_maps(&report_csv("hotspots", &alone, &["--no-inline"]))
        .into_iter()
        .map(|m| {
            ["function", "module", "self_samples", "total_samples"]
                .iter()
                .map(|k| m[*k].clone())
                .collect()
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
}

/// A copy of the `hot` fixture in `dir`, with its build-id (`readelf -n`).
fn hot_copy(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let bin = dir.join("hot");
    std::fs::copy(fixture_bin().join("hot"), &bin).unwrap();
    let out = std::process::Command::new("readelf")
        .args(["-n", bin.to_str().unwrap()])
        .output()
        .unwrap();
    let notes = String::from_utf8_lossy(&out.stdout);
    let bid = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap()
        .to_string();
    (bin, bid)
}

/// `addr2line -f -e BIN ADDR`: the function and the position
/// ("hot.c:11 (discriminator 1)" → "hot.c:11").
fn addr2line_f(bin: &std::path::Path, addr: u64) -> (String, String) {
    let out = std::process::Command::new("addr2line")
        .args(["-f", "-e", bin.to_str().unwrap(), &format!("{addr:x}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut l = text.lines();
    let name = l.next().unwrap().to_string();
    let pos = l.next().unwrap().split(" (").next().unwrap().to_string();
    (name, pos)
}

#[test]
fn what_is_learnt_of_a_binary_is_shared_by_build_id() {
    // Clones of one symbolization config (what an archive ingest gives
    // its captures) share what they learn of a binary, by build-id: once
    // one address of a function was resolved, every address of that
    // function resolves again without the file (symbol and source line),
    // and any other address gets its symbol (the symbol table is known
    // whole) and its line from the module kept open. Expected names and
    // lines: `addr2line -f -e hot` on the same addresses.
    use trawl_symbolize::{symbolize, Config, ModuleRequest, Status};
    let t = tempfile::tempdir().unwrap();
    let (bin, bid) = hot_copy(t.path());
    let (a, b) = (
        symbol_address(&bin, "spin_a"),
        symbol_address(&bin, "spin_b"),
    );
    let c = symbol_address(&bin, "main");
    let addr2line = |addr: u64| addr2line_f(&bin, addr);
    let (a4, b4) = (addr2line(a + 4), addr2line(b + 4));
    let main_line = addr2line(c).1;
    // Only the temporary directory is searched (not perf's build-id
    // cache, which may hold the fixture too).
    let fresh = || {
        let mut c = Config::default();
        c.debug_dirs = vec![t.path().to_path_buf()];
        c
    };
    let cfg = fresh();
    let ask = |cfg: &Config, addrs: Vec<u64>| {
        symbolize(
            cfg,
            vec![ModuleRequest {
                path: "/elsewhere/hot".into(),
                build_id: Some(bid.clone()),
                kernel: false,
                addresses: addrs,
            }],
        )
        .remove(0)
    };
    let names = |r: &trawl_symbolize::ModuleResult| -> Vec<Option<String>> {
        r.symbols
            .iter()
            .map(|s| s.symbol.as_ref().map(|h| h.name.clone()))
            .collect()
    };
    let line = |r: &trawl_symbolize::ModuleResult, i: usize| -> String {
        let f = r.symbols[i].inline.first().expect("a source line");
        format!("{}:{}", f.file.as_deref().unwrap(), f.line.unwrap())
    };
    let first = ask(&cfg.clone(), vec![a, b]);
    assert_eq!(first.status, Status::Ok);
    assert_eq!(
        names(&first),
        vec![Some("spin_a".into()), Some("spin_b".into())]
    );
    let opened = cfg.memo().opened.load(std::sync::atomic::Ordering::Relaxed);
    std::fs::remove_file(&bin).unwrap();
    // Other instructions of the same functions: from what was learnt.
    let again = ask(&cfg.clone(), vec![b + 4, a + 4]);
    assert_eq!(again.status, Status::Ok);
    assert_eq!(names(&again), vec![Some(b4.0.clone()), Some(a4.0.clone())]);
    assert_eq!(line(&again, 0), b4.1);
    assert_eq!(line(&again, 1), a4.1);
    assert_eq!(
        cfg.memo().opened.load(std::sync::atomic::Ordering::Relaxed),
        opened,
        "no file opened for what was learnt"
    );
    // Another function: its symbol from the table learnt whole, its line
    // from the module this process keeps open (the file is gone, its
    // mapping is not): still no file opened.
    let other = ask(&cfg.clone(), vec![c]);
    assert_eq!(names(&other), vec![Some("main".into())]);
    assert_eq!(line(&other, 0), main_line);
    assert_eq!(
        cfg.memo().opened.load(std::sync::atomic::Ordering::Relaxed),
        opened
    );
    // A config of its own (another process, no store) has learnt nothing.
    assert_ne!(ask(&fresh(), vec![a]).status, Status::Ok);
}

#[test]
fn a_module_learnt_ahead_answers_as_one_learnt_when_asked() {
    // Ingest learns a module's symbol table (or reads it from the store)
    // on a thread of its own when it meets the module's first frame
    // (`prepare`), before the addresses are asked. That changes no answer:
    // the names and lines are those of a symbolizer that learnt nothing
    // ahead, and addr2line's (`addr2line -f -e hot`). The module is opened
    // once, and what was learnt ahead is kept in the store, from which a
    // config of its own (another process) answers without the file.
    use trawl_symbolize::{prepare, symbolize, Config, ModuleRequest, Status};
    let t = tempfile::tempdir().unwrap();
    let (bin, bid) = hot_copy(t.path());
    let addrs: Vec<u64> = ["spin_a", "spin_b", "main"]
        .iter()
        .map(|f| symbol_address(&bin, f) + 4)
        .collect();
    let addr2line: Vec<(String, String)> = addrs.iter().map(|&a| addr2line_f(&bin, a)).collect();
    let config = |store: Option<&std::path::Path>| {
        let mut c = Config::default();
        c.debug_dirs = vec![t.path().to_path_buf()];
        c.store = store.map(|d| {
            std::sync::Arc::new(trawl_enrich::symbol_store::SymbolStore::open(d).unwrap())
                as std::sync::Arc<dyn trawl_symbolize::FactStore>
        });
        c
    };
    let request = |addresses: Vec<u64>| ModuleRequest {
        path: "/elsewhere/hot".into(),
        build_id: Some(bid.clone()),
        kernel: false,
        addresses,
    };
    let answers = |cfg: &Config| {
        let r = symbolize(cfg, vec![request(addrs.clone())]).remove(0);
        assert_eq!(r.status, Status::Ok);
        r.symbols
            .iter()
            .map(|s| {
                let f = s.inline.first().expect("a source line");
                (
                    s.symbol
                        .as_ref()
                        .map(|h| h.name.clone())
                        .unwrap_or_default(),
                    format!("{}:{}", f.file.as_deref().unwrap(), f.line.unwrap()),
                )
            })
            .collect::<Vec<_>>()
    };
    let opened = |cfg: &Config| cfg.memo().opened.load(std::sync::atomic::Ordering::Relaxed);
    let store = t.path().join("store");
    let ahead = config(Some(&store));
    prepare(&ahead, &request(Vec::new()));
    assert_eq!(opened(&ahead), 1, "prepare opens the module");
    let learnt_ahead = answers(&ahead);
    assert_eq!(
        opened(&ahead),
        1,
        "the lines come from the module kept open"
    );
    let asked = config(None);
    assert_eq!(learnt_ahead, answers(&asked));
    assert_eq!(learnt_ahead, addr2line);
    // Another process: base and lines from the store, no file opened.
    let later = config(Some(&store));
    prepare(&later, &request(Vec::new()));
    assert_eq!(answers(&later), addr2line);
    assert_eq!(opened(&later), 0);
}

/// `--group-by REGEX`: a flat directory of two runs' files, named by run,
/// becomes one capture per run; a file the pattern does not match is
/// listed as skipped. Samples per capture: perf script's count of each
/// recording; the strace dump's calls are in its run's capture.
#[test]
fn inputs_grouped_by_a_users_pattern() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("flat");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::copy(fixture("hot-fp.data"), src.join("r1.hot.data")).unwrap();
    std::fs::copy(
        root_dir().join("fixtures/strace/io.strace"),
        src.join("r1.io.strace"),
    )
    .unwrap();
    std::fs::copy(fixture("threads.data"), src.join("r2.threads.data")).unwrap();
    std::fs::copy(fixture("recurse.data"), src.join("stray.data")).unwrap();
    let arch = t.path().join("arch");
    let err = ok(archive_ingest(
        &src,
        &arch,
        &["--group-by", r"^(r[0-9]+)\."],
    ));
    assert!(
        err.contains("2 captures ingested, 0 unchanged, 0 failed"),
        "{err}"
    );
    assert!(
        err.contains("stray.data") && err.contains("does not match --group-by"),
        "{err}"
    );
    let want: BTreeMap<String, usize> = [("r1", "hot-fp.data"), ("r2", "threads.data")]
        .into_iter()
        .map(|(c, f)| (c.to_string(), perf_script_samples(&fixture(f))))
        .collect();
    assert_eq!(samples_by_capture(&arch), want);
    let calls = sql_rows(
        &arch,
        "SELECT capture, count(*) > 0 FROM syscall GROUP BY capture ORDER BY capture",
    );
    assert_eq!(calls, vec![vec!["r1".to_string(), "true".to_string()]]);
    // --per-file and --group-by are two different rules: not both.
    let o = archive_ingest(&src, &arch, &["--per-file", "--group-by", "x"]);
    assert_refused(&o, "cannot be used with");
}

/// `kill -9` of an archive ingest at a range of moments (0 to 1.1 of a
/// whole run's time; smaller fractions too if none of those interrupted a
/// run), each run resuming the last: after every kill each
/// capture directory in the archive is whole (its samples = perf script's
/// count of its recording, every table opens) and the manifest reads;
/// a final run finishes the work (3 captures, each as perf script counts,
/// one manifest row each, no staging left).
#[test]
fn archive_runs_killed_at_any_moment_leave_whole_captures() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let want = runs_samples();
    let bin = fixture_bin();
    let args = |arch: &Path| -> Vec<String> {
        [
            "archive",
            "ingest",
            src.to_str().unwrap(),
            "-o",
            arch.to_str().unwrap(),
            "--debug-dir",
            bin.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // How long a whole run takes, once the symbol cache is warm (the first
    // run fills it and is slower than the ones killed below): the shorter
    // of two timed runs.
    let mut full = std::time::Duration::MAX;
    for i in 0..3 {
        let timed = t.path().join(format!("timed{i}"));
        let start = std::time::Instant::now();
        let o = std::process::Command::new(crate::common::trawl_exe())
            .args(args(&timed))
            .output()
            .unwrap();
        assert!(o.status.success());
        if i > 0 {
            full = full.min(start.elapsed());
        }
    }
    let arch = t.path().join("arch");
    let mut partial = false;
    // Kills at 0 to 1.1 of a run's time; then, should every one of them
    // have come too late (a loaded machine), kills at smaller fractions of
    // a run into an empty archive.
    let moments = (0..12u32)
        .map(|k| full * k / 10)
        .chain((1..10u32).map(|k| full * k / 40));
    for (k, wait) in moments.enumerate() {
        if k >= 12 && partial {
            break;
        }
        if k >= 12 && arch.exists() {
            std::fs::remove_dir_all(&arch).unwrap();
        }
        let mut child = std::process::Command::new(crate::common::trawl_exe())
            .args(args(&arch))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(wait);
        let _ = child.kill();
        let _ = child.wait();
        if !arch.exists() {
            continue;
        }
        // The captures the manifest names are whole (every table of the
        // archive opens).
        let mut caps = 0;
        if arch.join("capture.parquet").exists() {
            trawl_ok(&["tables", arch.to_str().unwrap()]);
            for (c, n) in samples_by_capture(&arch) {
                assert_eq!(n, want[&c], "killed after {wait:?}: capture {c} not whole");
                caps += 1;
            }
        }
        if caps < 3 {
            partial = true;
        }
        // Reset now and then, so that early kills hit a run's start again.
        if k < 12 && k % 4 == 3 {
            std::fs::remove_dir_all(&arch).unwrap();
        }
    }
    assert!(
        partial,
        "no kill interrupted a run: the kills came too late"
    );
    let err = ok(archive_ingest(&src, &arch, &[]));
    assert!(err.contains("0 failed"), "{err}");
    assert_eq!(samples_by_capture(&arch), want);
    assert_eq!(sql_scalar(&arch, "SELECT count(*) FROM capture"), "3");
    assert!(!arch.join(".staging").exists());
}

/// An archive of the layout before segments (fixtures/captures/v1-archive,
/// written by trawl at 5d0223f: a directory per capture) opens as it is,
/// and `trawl archive compact` moves its captures into one segment: the
/// same answers (samples as perf script counts them, the hotspots report
/// as before), no capture directory left; a second compaction has nothing
/// to do.
#[test]
fn archives_of_directories_open_and_compact_into_segments() {
    let t = tempfile::tempdir().unwrap();
    let arch = t.path().join("arch");
    let mut cp = std::process::Command::new("cp");
    cp.arg("-r")
        .arg(root_dir().join("fixtures/captures/v1-archive"))
        .arg(&arch);
    assert!(cp.status().unwrap().success());
    let want: BTreeMap<String, usize> = [("run1", "hot-fp.data"), ("run2", "threads.data")]
        .into_iter()
        .map(|(c, f)| (c.to_string(), perf_script_samples(&fixture(f))))
        .collect();
    assert_eq!(samples_by_capture(&arch), want);
    let before = report_csv("hotspots", &arch, &["--no-inline"]);
    let o = trawl(&["archive", "compact", arch.to_str().unwrap()]);
    let err = ok(o);
    assert!(err.contains("2 captures into 1 segments"), "{err}");
    assert!(!arch.join("capture=run1").exists() && !arch.join("capture=run2").exists());
    assert_eq!(samples_by_capture(&arch), want);
    assert_eq!(report_csv("hotspots", &arch, &["--no-inline"]), before);
    assert_eq!(
        sql_scalar(&arch, "SELECT count(DISTINCT segment) FROM capture"),
        "1"
    );
    let err = ok(trawl(&["archive", "compact", arch.to_str().unwrap()]));
    assert!(err.contains("0 captures into 0 segments"), "{err}");
}

/// `trawl archive compact` merges an archive's segments into one and
/// leaves the rows of a replaced capture behind (the segment's perf_sample
/// file then holds exactly the captures' samples, as perf script counts
/// them); killed at a range of moments it leaves every capture whole and
/// readable (the old layout or the new), and a later run finishes.
#[test]
fn compaction_merges_segments_and_survives_kills() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let arch = t.path().join("arch");
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    // run2 replaced (its old rows stay in the first segment), run3 added:
    // three segments.
    std::fs::copy(fixture("procs.data"), src.join("run2/threads.data")).unwrap();
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    std::fs::create_dir_all(src.join("run3")).unwrap();
    std::fs::copy(fixture("hot-fp.data"), src.join("run3/hot-fp.data")).unwrap();
    ok(archive_ingest(&src, &arch, &["--no-symbolize"]));
    let mut want = runs_samples();
    want.insert("run2".into(), perf_script_samples(&fixture("procs.data")));
    want.insert("run3".into(), perf_script_samples(&fixture("hot-fp.data")));
    assert_eq!(samples_by_capture(&arch), want);
    assert_eq!(
        sql_scalar(
            &arch,
            "SELECT count(*) FROM segment_file WHERE table_name = 'perf_sample'"
        ),
        "3"
    );
    let hot = report_csv("hotspots", &arch, &["--no-inline"]);
    let pristine = t.path().join("pristine");
    let copy = |to: &Path| {
        let _ = std::fs::remove_dir_all(to);
        let mut cp = std::process::Command::new("cp");
        cp.arg("-r").arg(&pristine).arg(to);
        assert!(cp.status().unwrap().success());
    };
    std::fs::rename(&arch, &pristine).unwrap();
    // How long a compaction takes.
    copy(&arch);
    let start = std::time::Instant::now();
    ok(trawl(&["archive", "compact", arch.to_str().unwrap()]));
    let full = start.elapsed();
    let mut interrupted = 0;
    for k in 0..10u32 {
        copy(&arch);
        let mut child = std::process::Command::new(crate::common::trawl_exe())
            .args(["archive", "compact", arch.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(full * k / 10);
        interrupted += child.try_wait().unwrap().is_none() as usize;
        let _ = child.kill();
        let _ = child.wait();
        // Every capture whole, whatever the moment.
        assert_eq!(samples_by_capture(&arch), want, "killed at {k}/10");
        // A later run finishes: one segment, the replaced rows gone.
        ok(trawl(&["archive", "compact", arch.to_str().unwrap()]));
        assert_eq!(samples_by_capture(&arch), want, "after a kill at {k}/10");
        assert_eq!(
            sql_scalar(&arch, "SELECT count(DISTINCT segment) FROM capture"),
            "1"
        );
        let total: usize = want.values().sum();
        assert_eq!(
            sql_scalar(
                &arch,
                "SELECT rows FROM segment_file WHERE table_name = 'perf_sample'"
            ),
            total.to_string()
        );
        assert_eq!(report_csv("hotspots", &arch, &["--no-inline"]), hot);
        let dirs: Vec<String> = std::fs::read_dir(&arch)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("segment=") || n.starts_with('.'))
            .filter(|n| n != ".trawl-archive.lock")
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
    }
    assert!(
        interrupted > 0,
        "no kill interrupted a compaction ({full:?})"
    );
}

/// `report annotate` over an archive decodes the function into the
/// segment (whose `instruction` serves all its captures) and counts each
/// instruction's samples as `perf annotate --stdio -n` does on the
/// recording; a segment's directory opens as the captures it holds, and
/// `trawl symbolize` refuses it (its tables hold many captures' rows).
#[test]
fn annotate_and_segment_directories_of_an_archive() {
    let t = tempfile::tempdir().unwrap();
    let src = runs(t.path());
    let arch = t.path().join("arch");
    ok(archive_ingest(&src, &arch, &[]));
    let want: Vec<(u64, u64)> = crate::annotate::perf_annotate(&fixture("hot-fp.data"), "spin_a")
        .into_iter()
        .map(|r| (r.0, r.1))
        .collect();
    assert!(!want.is_empty());
    let got: Vec<(u64, u64)> = csv_maps(&trawl_ok(&[
        "report",
        "annotate",
        "spin_a",
        arch.to_str().unwrap(),
        "--capture",
        "run1",
        "--format",
        "csv",
    ]))
    .into_iter()
    .map(|r| {
        (
            u64::from_str_radix(&r["address"], 16).unwrap(),
            r["samples"].parse().unwrap(),
        )
    })
    .collect();
    assert_eq!(got, want, "(address, samples) differ from perf annotate");
    let seg = std::fs::read_dir(&arch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("segment=")
        })
        .unwrap();
    assert!(seg.join("instruction.parquet").is_file());
    assert_eq!(samples_by_capture(&seg), runs_samples());
    let o = trawl(&["symbolize", seg.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a segment of the archive"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
