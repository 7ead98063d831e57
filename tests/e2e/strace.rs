//! strace dumps (fixtures/strace, recorded here with the commands in its
//! README): calls, stacks and arguments against the programs that made
//! them (worked out by hand from src/*.c) and `addr2line` for source lines.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn strace_fixture(name: &str) -> PathBuf {
    root().join("fixtures/strace").join(name)
}

/// Ingests dumps into a fresh capture (binaries found in fixtures/strace/bin).
fn ingest_dumps(names: &[&str], extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let bin = strace_fixture("bin");
    let files: Vec<PathBuf> = names.iter().map(|n| strace_fixture(n)).collect();
    let mut args = vec!["ingest"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend([
        "-o",
        cap.to_str().unwrap(),
        "--debug-dir",
        bin.to_str().unwrap(),
    ]);
    args.extend_from_slice(extra);
    trawl_ok(&args);
    (dir, cap)
}

/// Call lines of a dump, counted without trawl: lines that are not stack
/// frames, signals, exits or resumptions and have `name(`.
fn call_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            !l.starts_with(" >")
                && !l.contains("<... ")
                && !l.contains(" +++")
                && !l.contains(" --- ")
                && l.contains('(')
        })
        .count()
}

/// The rows of a report (CSV) inside the application (and of `pid`, when
/// given), as the values of `cols`, sorted.
fn app_rows(csv: &str, pid: Option<&str>, cols: &[&str]) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<String>> = csv_maps(csv)
        .into_iter()
        .filter(|r| r["app_function"] != "[outside the application]")
        .filter(|r| pid.is_none_or(|p| r["pid"] == p))
        .map(|r| cols.iter().map(|c| r[*c].clone()).collect())
        .collect();
    v.sort();
    v
}

/// Strings of the values of a row.
macro_rules! row {
    ($($v:expr),* $(,)?) => { vec![$($v.to_string()),*] };
}

/// The `-ff` files `ff/PROGRAM.PID`, sorted.
fn ff_files(program: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(strace_fixture("ff"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{program}.")))
        .map(|n| format!("ff/{n}"))
        .collect();
    v.sort();
    v
}

/// 1-based line of the first line of `src` containing `needle`.
fn source_line(src: &str, needle: &str) -> usize {
    src.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn calls_exits_and_time_match_the_dump() {
    let text = std::fs::read_to_string(strace_fixture("mem.strace")).unwrap();
    let (_t, cap) = ingest_dumps(&["mem.strace"], &[]);
    let n: usize = sql_scalar(&cap, "SELECT count(*) FROM syscall")
        .parse()
        .unwrap();
    assert_eq!(n, call_lines(&text));
    // Every call finished and has a -k stack.
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM syscall WHERE NOT finished OR stack_id IS NULL"
        ),
        "0"
    );
    // Parent and forked child both exit 0 (src/mem.c: child() _exit(0)).
    assert_eq!(
        sql_rows(
            &cap,
            "SELECT kind, exit_code FROM strace_event WHERE kind <> 'signal' ORDER BY line"
        ),
        vec![vec!["exited", "0"], vec!["exited", "0"]]
    );
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT value FROM capture_meta WHERE key = 'strace_time'"
        ),
        "epoch"
    );
    // The first call's time, from the dump's first line.
    let first = text
        .lines()
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .replace('.', "");
    assert_eq!(
        sql_scalar(&cap, "SELECT time_ns FROM syscall WHERE syscall_id = 0"),
        format!("{first}000")
    );
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
}

/// The ten mallocs of 256 KiB (glibc mmaps each) are attributed to
/// `malloc_loop` at the line of the malloc call in src/mem.c; the frame's
/// source line is the one `addr2line` gives for the return address - 1.
#[test]
fn malloc_mmaps_resolve_to_the_calling_line() {
    let (_t, cap) = ingest_dumps(&["mem.strace"], &[]);
    let r = sql_rows(
        &cap,
        "SELECT f.function, f.srcline, fr.rel_pc, count(*) \
         FROM syscall s JOIN stack_entry e USING (segment, stack_id) \
         JOIN frame_name f ON f.segment = e.segment AND f.frame_id = e.frame_id \
         JOIN frame fr ON fr.segment = e.segment AND fr.frame_id = e.frame_id \
         JOIN module m ON m.segment = fr.segment AND m.module_id = fr.module_id \
         WHERE s.name = 'mmap' AND s.length = 266240 AND m.path LIKE '%/bin/mem' \
           AND f.function = 'malloc_loop' \
         GROUP BY 1, 2, 3",
    );
    assert_eq!(r.len(), 1, "{r:?}");
    let src = std::fs::read_to_string(strace_fixture("src/mem.c")).unwrap();
    let line = source_line(&src, "touch(malloc(256 * 1024)");
    assert_eq!(r[0][1], format!("mem.c:{line}"));
    assert_eq!(r[0][3], "10");
    let pc: u64 = r[0][2].parse().unwrap();
    let out = Command::new("addr2line")
        .args(["-f", "-e"])
        .arg(strace_fixture("bin/mem"))
        .arg(format!("{:#x}", pc - 1))
        .output()
        .expect("addr2line (binutils)");
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut l = out.lines();
    assert_eq!(l.next(), Some("malloc_loop"));
    // binutils appends " (discriminator N)" to some lines.
    let loc = l.next().unwrap().split(" (").next().unwrap();
    assert!(loc.ends_with(&format!("mem.c:{line}")), "{out}");
}

/// Bytes by file, worked out from src/io.c: 100 writes of 4096 to out.bin,
/// 64000 bytes of lines through stdio, out.bin read back, writev of
/// 10 + 20 + 30, pwrite64/pread64 of 512 at 1 MiB, sendfile of out.bin.
#[test]
fn io_calls_carry_bytes_and_paths() {
    let (_t, cap) = ingest_dumps(&["io.strace"], &[]);
    let r = sql_rows(&cap,
        "SELECT name, regexp_replace(fd_path, '.*/', '') AS file, count(*), sum(retval), sum(count) \
         FROM syscall WHERE fd_path LIKE '/tmp/iot/%' \
           AND name IN ('read', 'write', 'writev', 'pread64', 'pwrite64', 'sendfile') \
         GROUP BY 1, 2 ORDER BY 1, 2",
    );
    let want: Vec<Vec<String>> = [
        // read_back: 409600 / 8192 = 50 full reads and the 0 at EOF.
        ["pread64", "pos.bin", "1", "512", "512"],
        ["pwrite64", "pos.bin", "1", "512", "512"],
        ["read", "out.bin", "51", "409600", "417792"],
        ["sendfile", "copy.bin", "1", "409600", "409600"],
        // buffered_lines: stdio writes 4096-byte blocks, the rest at fclose.
        ["write", "lines.txt", "16", "64000", "64000"],
        ["write", "out.bin", "100", "409600", "409600"],
        ["writev", "vec.bin", "1", "60", "60"],
    ]
    .iter()
    .map(|r| r.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(r, want);
}

/// `strace -ff -o NAME` files (pid from the name, `-tt` clock times) and a
/// `-r` dump (relative times summed from 0).
#[test]
fn per_process_files_and_relative_times() {
    let ff = ff_files("mem");
    let names: Vec<&str> = ff.iter().map(String::as_str).collect();
    let (_t, cap) = ingest_dumps(&names, &[]);
    let mut pids: Vec<String> = ff
        .iter()
        .map(|f| f.rsplit('.').next().unwrap().to_string())
        .collect();
    pids.sort();
    let got: Vec<String> = sql_rows(&cap, "SELECT DISTINCT pid FROM syscall ORDER BY pid")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(got, pids);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT min(value) FROM capture_meta WHERE key = 'strace_time'"
        ),
        "clock_of_day"
    );
    // The child's mmap of 2 MiB (src/mem.c child()) is in the child's file.
    assert_eq!(
        sql_scalar(
            &cap,
            &format!("SELECT pid FROM syscall WHERE name = 'mmap' AND length = 2097152")
        ),
        pids[1]
    );

    let text = std::fs::read_to_string(strace_fixture("io-r.strace")).unwrap();
    let total_us: i64 = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|t| t.replace('.', "").parse::<i64>().ok())
        .sum();
    let (_t2, cap2) = ingest_dumps(&["io-r.strace"], &[]);
    assert_eq!(
        sql_scalar(&cap2, "SELECT max(time_ns) FROM (SELECT time_ns FROM syscall UNION ALL SELECT time_ns FROM strace_event)"),
        (total_us * 1000).to_string()
    );
    assert_eq!(sql_scalar(&cap2, "SELECT min(time_ns) FROM syscall"), "0");
}

/// A dump without stacks (no `-k`): `report io` and `report unfreed` need
/// no `--app`; they attribute by process and file, and say so. Expected:
/// the bytes of each file and direction summed from the dump's own
/// `write(3</tmp/iot/out.bin>, ...) = 4096` lines.
#[test]
fn reports_without_stacks_attribute_by_process_and_file() {
    let text = std::fs::read_to_string(strace_fixture("io-r.strace")).unwrap();
    let mut want: std::collections::BTreeMap<(String, &str), i64> = Default::default();
    for l in text.lines() {
        let Some((_, call)) = l.trim_start().split_once(' ') else {
            continue;
        };
        let dir = match call.split('(').next().unwrap() {
            // sendfile(OUT<path>, IN<path>, ...): bytes written to OUT.
            "write" | "pwrite64" | "writev" | "sendfile" => "write",
            "read" | "pread64" => "read",
            _ => continue,
        };
        let (Some(path), Some(ret)) = (
            call.split_once('<')
                .and_then(|(_, r)| r.split_once('>'))
                .map(|(p, _)| p),
            call.rsplit_once(") = ")
                .and_then(|(_, r)| r.split_whitespace().next()),
        ) else {
            continue;
        };
        if path.starts_with("/tmp/iot/") {
            *want.entry((path.to_string(), dir)).or_default() += ret.parse::<i64>().unwrap_or(0);
        }
    }
    assert!(want.len() >= 5, "{want:?}");
    let (_t, cap) = ingest_dumps(&["io-r.strace"], &[]);
    let o = trawl(&["report", "io", cap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("attributed by process and file only"), "{err}");
    let out = report_csv("io", &cap, &[]);
    let cols = csv_rows(&out);
    let header: Vec<&str> = out.lines().next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|c| *c == n).unwrap();
    let mut got: std::collections::BTreeMap<(String, &str), i64> = Default::default();
    for r in &cols {
        let dir = if r[col("direction")] == "read" {
            "read"
        } else {
            "write"
        };
        if r[col("file")].starts_with("/tmp/iot/") {
            *got.entry((r[col("file")].clone(), dir)).or_default() +=
                r[col("bytes")].parse::<i64>().unwrap();
        }
    }
    assert_eq!(got, want);
    let o = trawl(&["report", "unfreed", cap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A damaged dump: a line cut in the middle, a garbage line, a call whose
/// resumption is missing, a resumption without its start, non-UTF-8 bytes,
/// an unknown system call, and the file cut mid-line at the end. Each is a
/// diagnostic with its line number; the calls around them are kept;
/// `--strict` fails.
#[test]
fn damaged_dump_keeps_what_it_can() {
    let text = std::fs::read(strace_fixture("mem.strace")).unwrap();
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let mut bad: Vec<Vec<u8>> = lines[..40].iter().map(|l| l.to_vec()).collect();
    bad.push(b"19715 1795330737.600000 read(3, \"\\177ELF".to_vec()); // line 41: cut
    bad.push(b"this is not strace output".to_vec()); // 42
    bad.push(b"19715 1795330737.600001 wait4(-1,  <unfinished ...>".to_vec()); // 43: never resumed
    bad.push(b"19716 1795330737.600002 <... read resumed>\"x\", 1) = 1".to_vec()); // 44: no start
    bad.push(b"19715 1795330737.600003 write(1, \"\xff\xfe\", 2) = 2".to_vec()); // 45: not UTF-8
    bad.push(b"19715 1795330737.600004 frobnicate(1, 2) = 0".to_vec()); // 46: unknown name
    bad.extend(lines[40..100].iter().map(|l| l.to_vec()));
    let mut data = bad.join(&b'\n');
    data.extend_from_slice(b"\n19715 1795330737.700000 mmap(NULL, 4096, PROT_R");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.strace");
    std::fs::write(&f, &data).unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&f, &cap, &[]);
    let d = sql_rows(
        &cap,
        "SELECT line, kind FROM diagnostic ORDER BY line, kind",
    );
    let d: Vec<(String, String)> = d
        .into_iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    for want in [
        ("41", "unparsed_line"),
        ("42", "unparsed_line"),
        ("43", "never_resumed"),
        ("44", "resumed_without_start"),
        ("45", "non_utf8"),
    ] {
        assert!(
            d.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} not in {d:?}"
        );
    }
    let last = (bad.len() + 1).to_string();
    assert!(d.contains(&(last, "truncated_line".to_string())), "{d:?}");
    // Nothing around the damage is lost: every call line of the good parts,
    // plus the unknown call, the UTF-8-repaired write, the orphan
    // resumption and the unresumed wait4.
    let good = String::from_utf8_lossy(&text).into_owned();
    let good_lines: Vec<&str> = good.lines().collect();
    let expected = call_lines(&good_lines[..100].join("\n")) + 4;
    let n: usize = sql_scalar(&cap, "SELECT count(*) FROM syscall")
        .parse()
        .unwrap();
    assert_eq!(n, expected);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM syscall WHERE name = 'frobnicate'"
        ),
        "1"
    );

    let o = trawl(&[
        "ingest",
        f.to_str().unwrap(),
        "-o",
        dir.path().join("strict").to_str().unwrap(),
        "--strict",
    ]);
    assert_refused(&o, "unparsed_line");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.strace:41"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!dir.path().join("strict").exists());
}

/// The parent's unfreed memory in the application at the end of a run of
/// bin/mem, worked out by hand from src/mem.c (page size 4096) and, for
/// glibc's own heap growth, from mem.strace's brk return values (the same
/// in every run):
/// - leak_big: mmap 4 MiB, never unmapped;
/// - freed: 1 MiB mapped and unmapped: absent;
/// - partial: 16 pages minus the 4 unmapped = 12 pages, in two regions;
/// - grow: mmap 8 pages, mremap to 32: 8 pages still the mmap's, 24 the
///   mremap's;
/// - shrink: 16 pages mremapped to 4;
/// - fixed: 8 pages, 2 of them replaced by a MAP_FIXED mmap (mem.c's next
///   line): 6 pages in two regions + 2 pages;
/// - heap: sbrk +64 then -16 pages: 48 pages;
/// - malloc_loop: 10 mmaps of 256 KiB + 4 KiB (glibc's chunk header,
///   rounded to pages) and glibc's first heap growth, brk from
///   0x564b2fa2c000 to 0x564b2fa4d000 = 135168 bytes (dump lines 313-315);
/// - child: only in the child, 2 MiB; the child also holds copies of
///   everything the parent had mapped before the fork.
///
/// Rows of [`MEM_COLS`], sorted.
fn mem_unfreed_expected() -> Vec<Vec<String>> {
    let src = std::fs::read_to_string(strace_fixture("src/mem.c")).unwrap();
    let at = |needle: &str| format!("mem.c:{}", source_line(&src, needle));
    let row = |f: &str, fb: u64, actual: &str, line: String, b: u64, n: u32| {
        row![f, fb, actual, line, b, n]
    };
    let page = 4096u64;
    let mut want = vec![
        row(
            "fixed",
            8 * page,
            "__mmap",
            at("char *p = mmap(NULL, 8 * PAGE"),
            6 * page,
            2,
        ),
        row(
            "fixed",
            8 * page,
            "__mmap",
            at("mmap(p + 3 * PAGE"),
            2 * page,
            1,
        ),
        row(
            "grow",
            32 * page,
            "__GI___mremap",
            at("return mremap(p, 8 * PAGE"),
            24 * page,
            1,
        ),
        row(
            "grow",
            32 * page,
            "__mmap",
            at("void *p = mmap(NULL, 8 * PAGE"),
            8 * page,
            1,
        ),
        row(
            "heap",
            48 * page,
            "__brk",
            at("sbrk(64 * PAGE)"),
            48 * page,
            1,
        ),
        row(
            "leak_big",
            4 << 20,
            "__mmap",
            at("mmap(NULL, 4L << 20"),
            4 << 20,
            1,
        ),
        row(
            "malloc_loop",
            10 * 266240 + 135168,
            "__brk",
            at("touch(malloc(256 * 1024)"),
            135168,
            1,
        ),
        row(
            "malloc_loop",
            10 * 266240 + 135168,
            "__mmap",
            at("touch(malloc(256 * 1024)"),
            10 * 266240,
            10,
        ),
        row(
            "partial",
            12 * page,
            "__mmap",
            at("char *p = mmap(NULL, 16 * PAGE"),
            12 * page,
            2,
        ),
        row(
            "shrink",
            4 * page,
            "__mmap",
            at("void *p = mmap(NULL, 16 * PAGE"),
            4 * page,
            1,
        ),
    ];
    want.sort();
    want
}

/// The columns of an unfreed report `mem_unfreed_expected` gives.
const MEM_COLS: &[&str] = &[
    "app_function",
    "app_function_bytes",
    "actual_function",
    "app_line",
    "bytes",
    "regions",
];

#[test]
fn unfreed_memory_by_application_function_and_line() {
    let (_t, cap) = ingest_dumps(&["mem.strace"], &[]);
    let out = report_csv("unfreed", &cap, &[]);
    let src = std::fs::read_to_string(strace_fixture("src/mem.c")).unwrap();
    let at = |needle: &str| format!("mem.c:{}", source_line(&src, needle));
    let got = app_rows(&out, Some("19715"), MEM_COLS);
    assert_eq!(got, mem_unfreed_expected());
    // The child holds its own 2 MiB, attributed to child() in mem.c.
    let child: Vec<_> = csv_maps(&out)
        .into_iter()
        .filter(|r| r["pid"] == "19717" && r["app_function"] == "child")
        .map(|r| (r["bytes"].clone(), r["app_line"].clone()))
        .collect();
    assert_eq!(
        child,
        vec![("2097152".to_string(), at("mmap(NULL, 2L << 20"))]
    );
}

/// Just before freed() unmaps its 1 MiB (dump line 279), the region is
/// live; at the end it is not.
#[test]
fn live_regions_at_a_time() {
    let (_t, cap) = ingest_dumps(&["mem.strace"], &[]);
    let t = sql_scalar(&cap, "SELECT time_ns FROM syscall WHERE line = 279");
    let before: i64 = t.parse::<i64>().unwrap() - 1;
    let q = |at: &str| {
        sql_scalar(
            &cap,
            &format!(
                "SELECT count(*) FROM live_regions({at}) WHERE pid = 19715 AND bytes = 1048576"
            ),
        )
    };
    assert_eq!(q(&before.to_string()), "1");
    assert_eq!(q(&t), "0");
    assert_eq!(q(""), "0");
    let out = report_csv("unfreed", &cap, &["--at", &before.to_string()]);
    // The same moment as seconds after the first traced call.
    let t0: i64 = sql_scalar(&cap, "SELECT min(time_ns) FROM syscall")
        .parse()
        .unwrap();
    let secs = format!("+{}", (before - t0) as f64 / 1e9);
    let out2 = report_csv("unfreed", &cap, &["--at", &secs]);
    assert_eq!(out2, out, "--at {secs}");
    assert!(
        csv_maps(&out)
            .iter()
            .any(|r| r["app_function"] == "freed" && r["bytes"] == "1048576"),
        "{out}"
    );
}

/// Bytes transferred by io.strace's program, by application function,
/// worked out from src/io.c: 100 writes of 4096; 1000 lines of 64 bytes
/// through stdio = 15 full 4096-byte buffers written from fprintf and the
/// remaining 2560 bytes at fclose; 409600 bytes read back in 50 reads of
/// 8192 (the final 0-byte read moves nothing); writev 60; pwrite64 and
/// pread64 512 each; sendfile 409600. Then a window: from pwrite64 to
/// sendfile holds only positioned(); a lead reaching back to writev adds
/// vector_write().
/// Bytes a run of bin/io transfers in the application, worked out by hand
/// from src/io.c (the comment at its top): rows of (app_function,
/// app_line, direction, bytes, calls), sorted. fprintf's 64000 bytes leave
/// stdio in 4096-byte writes, the rest at fclose; 0-byte reads move
/// nothing and are not counted.
fn io_expected() -> Vec<Vec<String>> {
    let src = std::fs::read_to_string(strace_fixture("src/io.c")).unwrap();
    let at = |needle: &str| format!("io.c:{}", source_line(&src, needle));
    let row = |f: &str, line: String, d: &str, b: u64, n: u32| row![f, line, d, b, n];
    let mut want = vec![
        row(
            "buffered_lines",
            at("fprintf(f, \"line"),
            "write",
            15 * 4096,
            15,
        ),
        row("buffered_lines", at("fclose(f)"), "write", 2560, 1),
        row("copy", at("sendfile(out, in"), "write", 409600, 1),
        row("positioned", at("pread(fd, buf"), "read", 512, 1),
        row("positioned", at("pwrite(fd, buf"), "write", 512, 1),
        row("raw_writes", at("write(fd, block"), "write", 409600, 100),
        row("read_back", at("while ((n = read(fd"), "read", 409600, 50),
        row("vector_write", at("writev(fd, iov, 3)"), "write", 60, 1),
    ];
    want.sort();
    want
}

#[test]
fn io_report_by_application_function_and_window() {
    let (_t, cap) = ingest_dumps(&["io.strace"], &[]);
    let report = |extra: &[&str]| -> Vec<Vec<String>> {
        app_rows(
            &report_csv("io", &cap, extra),
            None,
            &["app_function", "app_line", "direction", "bytes", "calls"],
        )
    };
    assert_eq!(report(&[]), io_expected());

    let t = |name: &str| -> i64 {
        sql_scalar(&cap, &format!("SELECT min(time_ns) FROM syscall WHERE name = '{name}' AND fd_path LIKE '/tmp/iot/%'"))
            .parse()
            .unwrap()
    };
    let (tw, tp, ts) = (t("writev"), t("pwrite64"), t("sendfile"));
    let win = report(&["--from", &tp.to_string(), "--to", &ts.to_string()]);
    let names: Vec<&str> = win.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["positioned", "positioned"]);
    let lead = format!("{}", (tp - tw) as f64 / 1e9);
    let win = report(&[
        "--from",
        &tp.to_string(),
        "--to",
        &ts.to_string(),
        "--lead",
        &lead,
    ]);
    let names: Vec<&str> = win.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["positioned", "positioned", "vector_write"]);
}

/// `-X raw` (flags as numbers) and `-X verbose` (numbers and names) dumps
/// of the same program rebuild the same unfreed memory per kind as the
/// default (names) dump: the parent's and the forked child's.
#[test]
fn raw_and_verbose_flag_formats_rebuild_the_same_regions() {
    let per_kind = |name: &str| {
        let (_t, cap) = ingest_dumps(&[name], &[]);
        sql_rows(
            &cap,
            "SELECT r.pid = p.pid AS parent, kind, CAST(sum(bytes) AS BIGINT) \
             FROM live_regions() r, (SELECT pid FROM syscall WHERE syscall_id = 0) p \
             GROUP BY 1, 2 ORDER BY 1, 2",
        )
    };
    let names = per_kind("mem.strace");
    assert!(names.iter().any(|r| r[1] == "anon"), "{names:?}");
    assert_eq!(per_kind("mem-raw.strace"), names);
    assert_eq!(per_kind("mem-verbose.strace"), names);
}

/// Threads share their process's space: the 1 MiB each worker thread maps
/// (src/threads.c) belongs to the process, not to the thread ids strace
/// prints, and to `worker` at its mmap line; the two thread stacks
/// pthread_create maps (8 MiB + a guard page each) to `main` at the
/// pthread_create line; the vfork'd child that execs /bin/true is a
/// process of its own. The application directory is found from the
/// executable's `_start`, not the dynamic loader's.
#[test]
fn threads_share_the_process_space_and_exec_starts_a_new_one() {
    let (_t, cap) = ingest_dumps(&["threads.strace"], &[]);
    let pid = sql_scalar(&cap, "SELECT pid FROM syscall WHERE syscall_id = 0");
    check_threads_unfreed(&cap, &pid);
}

/// strace prints the stack of `exit`/`exit_group` after the thread's
/// `+++ exited with N +++` line, often with other threads' calls (and
/// their stacks) between the call and that line: every `-k` frame line of
/// the dump belongs to a call, and an exit call's frames are the lines
/// after its thread's exit line (read here from the text, as strace
/// printed them).
#[test]
fn exit_stacks_follow_the_exited_line() {
    let text = std::fs::read_to_string(strace_fixture("threads.strace")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let frame_lines = lines.iter().filter(|l| l.starts_with(" > ")).count();
    let (_t, cap) = ingest_dumps(&["threads.strace"], &[]);
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
    // Calls' and signals' stacks.
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT (SELECT count(*) FROM syscall s JOIN stack_entry e USING (segment, stack_id)) \
                  + (SELECT count(*) FROM strace_event s JOIN stack_entry e USING (segment, stack_id))"
        ),
        frame_lines.to_string()
    );
    let mut exits = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(pid) = l
            .strip_suffix(" +++")
            .filter(|l| l.contains("+++ exited with "))
        else {
            continue;
        };
        let pid = pid.split_whitespace().next().unwrap();
        let want: Vec<String> = lines[i + 1..]
            .iter()
            .take_while(|l| l.starts_with(" > "))
            .map(|l| {
                let hex = l.rsplit("[0x").next().unwrap().trim_end_matches(']');
                u64::from_str_radix(hex, 16).unwrap().to_string()
            })
            .collect();
        let got: Vec<String> = sql_rows(
            &cap,
            &format!(
                "SELECT fr.rel_pc FROM syscall s JOIN stack_entry e USING (segment, stack_id) \
                 JOIN frame fr ON fr.segment = e.segment AND fr.frame_id = e.frame_id \
                 WHERE s.pid = {pid} AND s.name IN ('exit', 'exit_group') ORDER BY e.depth"
            ),
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        assert!(!want.is_empty(), "line {}", i + 1);
        assert_eq!(got, want, "pid {pid} (line {})", i + 1);
        exits += 1;
    }
    assert!(exits >= 3, "{exits}");
}

/// `-ff` files of the same program, one per thread: each file's pid is its
/// thread id; the clone3 calls in the main thread's file join the workers'
/// files to the process.
#[test]
fn per_thread_files_join_their_process() {
    let names = ff_files("threads");
    assert_eq!(names.len(), 4, "{names:?}");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let (_t, cap) = ingest_dumps(&refs, &[]);
    // The main thread's file: the one with the clone3 calls.
    let pid = sql_scalar(&cap, "SELECT min(pid) FROM syscall WHERE name = 'clone3'");
    assert_eq!(
        sql_scalar(&cap, "SELECT count(DISTINCT pid) FROM syscall"),
        "4"
    );
    check_threads_unfreed(&cap, &pid);
}

/// The unfreed report of a run of bin/threads whose process is `pid`, in
/// the application (src/threads.c): each worker's 1 MiB at its mmap line,
/// main's 2 MiB, the two thread stacks (8 MiB + a guard page each) and
/// glibc's first heap growth (135168 bytes, the malloc in pthread_create)
/// at the pthread_create line, all in the process; /bin/true, exec'd by
/// the vfork child, holds only its own mappings (a second process).
fn check_threads_unfreed(cap: &Path, pid: &str) {
    let src = std::fs::read_to_string(strace_fixture("src/threads.c")).unwrap();
    let at = |needle: &str| format!("threads.c:{}", source_line(&src, needle));
    let out = report_csv("unfreed", &cap, &[]);
    let cols = [
        "pid",
        "app_function",
        "actual_function",
        "app_line",
        "bytes",
        "regions",
    ];
    let create = at("pthread_create(&t[i]");
    let mut want = vec![
        row![
            pid,
            "worker",
            "__mmap",
            at("void *p = mmap(NULL, 1L << 20"),
            2 << 20,
            2
        ],
        row![
            pid,
            "main",
            "__mmap",
            at("void *q = mmap(NULL, 2L << 20"),
            2 << 20,
            1
        ],
        row![
            pid,
            "main",
            "__mmap",
            create,
            2 * (8 * 1024 * 1024 + 4096),
            2
        ],
        row![pid, "main", "__brk", create, 135168, 1],
    ];
    want.sort();
    assert_eq!(app_rows(&out, None, &cols), want);
    let spaces = sql_scalar(cap, "SELECT count(DISTINCT pid) FROM live_regions()");
    assert_eq!(spaces, "2");
    // --pid keeps the process's rows, and only them.
    assert!(csv_maps(&out).iter().any(|r| r["pid"] != pid), "{out}");
    let only = report_csv("unfreed", cap, &["--pid", pid]);
    assert_eq!(app_rows(&only, None, &cols), want);
    assert!(csv_maps(&only).iter().all(|r| r["pid"] == pid), "{only}");
}

// perf.data syscall tracepoints (fixtures/perf/*-syscalls.data: the same
// programs recorded with `perf record -e 'syscalls:sys_enter_*' -e
// 'syscalls:sys_exit_*' --call-graph dwarf`, commands in fixtures/perf's
// README) build the same `syscall` table.

/// Ingests a perf.data of fixtures/perf, binaries from fixtures/strace/bin.
fn ingest_perf_syscalls(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let bin = strace_fixture("bin");
    ingest_file(
        &fixture(name),
        &cap,
        &["--debug-dir", bin.to_str().unwrap()],
    );
    (dir, cap)
}

/// `perf script` lines of one tracepoint: (tid, time text, payload text).
fn perf_script_events(file: &Path, event: &str) -> Vec<(String, String)> {
    perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "tid,event,trace",
    ])
    .lines()
    .filter_map(|l| {
        let (head, trace) = l.split_once(&format!("syscalls:{event}:"))?;
        Some((head.trim().to_string(), trace.trim().to_string()))
    })
    .collect()
}

/// A `name: 0x...` field of a perf script tracepoint line, as a number.
fn perf_field(trace: &str, name: &str) -> u64 {
    let v = trace
        .split(", ")
        .find_map(|f| f.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {trace}"));
    u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap()
}

/// Enter and exit samples become one row per call: every sys_enter sample
/// `perf script` prints is a call (plus the exits whose enter came before
/// the recording: the exec that enabled it and the child's return from
/// fork); the mmap arguments and return values are the ones perf script
/// decodes, in the same order.
#[test]
fn perf_syscall_tracepoints_pair_enter_and_exit() {
    let data = fixture("mem-syscalls.data");
    let (_t, cap) = ingest_perf_syscalls("mem-syscalls.data");
    let script = perf(&["script", "-i", data.to_str().unwrap(), "-F", "event"]);
    let enters = script.matches("syscalls:sys_enter_").count();
    let exits = script.matches("syscalls:sys_exit_").count();
    let total: usize = sql_scalar(&cap, "SELECT count(*) FROM syscall")
        .parse()
        .unwrap();
    let exit_only: usize = sql_scalar(
        &cap,
        "SELECT count(*) FROM syscall WHERE ret_note LIKE 'exit only%'",
    )
    .parse()
    .unwrap();
    assert_eq!(total, enters + exit_only);
    assert_eq!(
        sql_rows(
            &cap,
            "SELECT name, retval FROM syscall WHERE ret_note LIKE 'exit only%' ORDER BY time_ns"
        ),
        vec![row!["execve", 0], row!["clone", 0]]
    );
    // exit_group never returns: one enter without exit per process.
    assert_eq!(enters - exits + exit_only, 2);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM syscall WHERE name = 'exit_group' AND ret = '?' AND finished"
        ),
        "2"
    );

    let lens: Vec<u64> = perf_script_events(&data, "sys_enter_mmap")
        .iter()
        .map(|(_, t)| perf_field(t, "len"))
        .collect();
    let rets: Vec<String> = perf_script_events(&data, "sys_exit_mmap")
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    let got = sql_rows(
        &cap,
        "SELECT length, ret, duration_ns > 0 FROM syscall WHERE name = 'mmap' ORDER BY time_ns",
    );
    assert_eq!(got.len(), lens.len());
    for ((g, len), ret) in got.iter().zip(&lens).zip(&rets) {
        assert_eq!(g, &row![len, ret, true]);
    }
    // Failed calls: errno by name (ld.so's access of ld.so.preload).
    assert_eq!(
        sql_rows(
            &cap,
            "SELECT name, retval, errno FROM syscall WHERE errno IS NOT NULL"
        ),
        vec![row!["access", -1, "ENOENT"]]
    );
    // Each call's stack is the user part of its enter sample's.
    let bad = sql_scalar(
        &cap,
        "SELECT count(*) FROM syscall c JOIN perf_sample s ON s.sample_id = c.sample_id \
         WHERE c.stack_id IS NULL OR s.stack_id IS NULL",
    );
    assert_eq!(bad, "0");
}

/// The unfreed memory rebuilt from perf's tracepoints is the one worked out
/// by hand for strace's dump of the same program.
#[test]
fn perf_syscalls_rebuild_the_unfreed_memory_of_strace() {
    let (_t, cap) = ingest_perf_syscalls("mem-syscalls.data");
    let out = report_csv("unfreed", &cap, &[]);
    let parent = sql_scalar(&cap, "SELECT min(tgid) FROM syscall");
    assert_eq!(
        app_rows(&out, Some(&parent), MEM_COLS),
        mem_unfreed_expected()
    );
    let src = std::fs::read_to_string(strace_fixture("src/mem.c")).unwrap();
    let child: Vec<_> = csv_maps(&out)
        .into_iter()
        .filter(|r| r["pid"] != parent && r["app_function"] == "child")
        .map(|r| (r["bytes"].clone(), r["app_line"].clone()))
        .collect();
    assert_eq!(
        child,
        vec![(
            "2097152".to_string(),
            format!("mem.c:{}", source_line(&src, "mmap(NULL, 2L << 20"))
        )]
    );
    // The child exited (PERF_RECORD_EXIT): after that moment its regions
    // are gone, the parent's are not.
    let exit = sql_scalar(
        &cap,
        &format!("SELECT time_ns FROM perf_task_event WHERE kind = 'exit' AND pid <> {parent}"),
    );
    let live = |t: &str| {
        sql_scalar(
            &cap,
            &format!("SELECT count(*) FROM live_regions({t}) WHERE pid <> {parent}"),
        )
        .parse::<u32>()
        .unwrap()
    };
    let before: i64 = exit.parse::<i64>().unwrap() - 1;
    assert!(live(&before.to_string()) > 0);
    assert_eq!(live(&exit), 0);
    assert!(
        sql_scalar(
            &cap,
            &format!("SELECT count(*) FROM live_regions({exit}) WHERE pid = {parent}")
        )
        .parse::<u32>()
        .unwrap()
            > 0
    );
}

/// pthread_create's clone3 passes its flags in memory perf does not
/// record: the threads are known by their process id, so their mappings
/// stay in the process (src/threads.c, as in the strace test).
#[test]
fn perf_syscalls_threads_share_the_process_space() {
    let (_t, cap) = ingest_perf_syscalls("threads-syscalls.data");
    let pid = sql_scalar(&cap, "SELECT min(tgid) FROM syscall");
    check_threads_unfreed(&cap, &pid);
    let clone3 = sql_scalar(
        &cap,
        "SELECT count(*) FROM syscall WHERE name = 'clone3' AND retval > 0",
    );
    assert_eq!(clone3, "2");
}

/// I/O bytes from perf's tracepoints: the same per function and line as
/// worked out for strace (perf has no paths: files are `fd N`).
#[test]
fn perf_syscalls_attribute_io_bytes() {
    let (_t, cap) = ingest_perf_syscalls("io-syscalls.data");
    let out = report_csv("io", &cap, &[]);
    assert_eq!(
        app_rows(
            &out,
            None,
            &["app_function", "app_line", "direction", "bytes", "calls"]
        ),
        io_expected()
    );
    assert!(csv_maps(&out).iter().all(|r| r["file"].starts_with("fd ")));
}

/// `-g` (frame pointers) tracepoints: the write calls of bin/hot with the
/// byte counts `perf script` decodes.
#[test]
fn perf_syscalls_with_frame_pointer_stacks() {
    let data = fixture("tracepoint.data");
    let (_t, cap) = ingest("tracepoint.data");
    let want: Vec<Vec<String>> = perf_script_events(&data, "sys_enter_write")
        .iter()
        .zip(perf_script_events(&data, "sys_exit_write"))
        .map(|((_, e), (_, x))| {
            let ret = i64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap();
            row![perf_field(e, "fd"), perf_field(e, "count"), ret]
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(
        sql_rows(
            &cap,
            "SELECT fd, count, retval FROM syscall ORDER BY time_ns"
        ),
        want
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT count(*) FROM syscall WHERE stack_id IS NULL"),
        "0"
    );
}

/// A program started through a launcher (pyenv's shim: bash scripts that
/// run a dozen programs, then exec the interpreter): the application is
/// the directory of what the first traced process exec'd last, not
/// /usr/bin, where most stacks end. Expected, read from the dump with zstd
/// and by eye: the root process's last successful execve, and the
/// 100,000-byte write the traced program made (`write('a'*100000)`)
/// charged to the application.
#[test]
fn the_application_is_what_a_launcher_execs_last() {
    let dump = strace_fixture("pyenv-shim.strace.zst");
    let o = Command::new("zstd")
        .arg("-dc")
        .arg(&dump)
        .output()
        .expect("zstd");
    let text = String::from_utf8(o.stdout).unwrap();
    let root = text.split_whitespace().next().unwrap().to_string();
    let last = text
        .lines()
        .filter(|l| {
            l.starts_with(&format!("{root} ")) && l.contains(" execve(\"") && l.contains(") = 0")
        })
        .last()
        .unwrap();
    let path = last.split('"').nth(1).unwrap();
    assert!(path.ends_with("/bin/python3"), "{last}");
    let want = format!("{}/", path.rsplit_once('/').unwrap().0);
    let (_t, cap) = ingest_dumps(&["pyenv-shim.strace.zst"], &[]);
    let dir = sql_scalar(&cap, "SELECT dir FROM _default_app");
    assert_eq!(dir, want);
    let csv = trawl_ok(&["report", "io", cap.to_str().unwrap(), "--format", "csv"]);
    let big: Vec<_> = csv_maps(&csv)
        .into_iter()
        .filter(|r| r["bytes"] == "100000")
        .collect();
    assert_eq!(big.len(), 1, "{csv}");
    assert_ne!(big[0]["app_function"], "[outside the application]", "{csv}");
}
