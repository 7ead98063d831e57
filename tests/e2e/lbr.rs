//! Branch stacks as extra samples (Ono et al. 2014, time-series
//! performance analysis). This machine cannot record LBR: the captures are
//! written with `trawl_synth::perf` around the real binary
//! `fixtures/perf/bin/lbr` (`src/lbr.c`: the paper's F1, F2, F3 and the
//! p3 call pattern of its Fig. 10), at the addresses `objdump -d` gives
//! for its calls and returns, and read back with the real
//! `perf script -F ip,sym,brstack,brstacksym`. Expected times per method
//! are worked out by hand below.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use trawl_ingest::perf::header::sample;
use trawl_ingest::perf::records::{context, BranchEntry};
use trawl_synth::perf::{sampling, PerfDataWriter, SampleOut};

use crate::common::*;

/// Where the binary is mapped (one mapping from file offset 0; the PIE's
/// text offsets equal its virtual addresses).
const BASE: u64 = 0x5555_0000_0000;
const KBASE: u64 = 0xffff_ffff_8100_0000;
/// 100 µs cpu-clock period, the paper's sampling interval.
const T: u64 = 100_000;
const PID: i32 = 4242;

/// PERF_SAMPLE_BRANCH_*: USER 0, ANY_CALL 4, ANY_RETURN 5, TYPE_SAVE 16.
const BR_USER: u64 = 1 << 0;
const BR_ANY_CALL: u64 = 1 << 4;
const BR_ANY_RETURN: u64 = 1 << 5;
const BR_TYPE_SAVE: u64 = 1 << 16;
/// PERF_BR_* types (entry flags bits 20-23).
const CALL: u64 = 4;
const RET: u64 = 6;
const SYSCALL: u64 = 7;
const SYSRET: u64 = 8;

/// The calls and returns of `bin/lbr`, from `objdump -d`.
struct Disasm {
    /// Function start addresses.
    start: HashMap<String, u64>,
    /// (caller, callee) → (call instruction, return address).
    calls: HashMap<(String, String), (u64, u64)>,
    /// Function → its `ret` instruction.
    ret: HashMap<String, u64>,
}

fn disasm() -> Disasm {
    let out = Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(fixture_bin().join("lbr"))
        .output()
        .expect("objdump (binutils)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut d = Disasm {
        start: HashMap::new(),
        calls: HashMap::new(),
        ret: HashMap::new(),
    };
    let mut cur = String::new();
    let mut pending: Option<(String, u64)> = None;
    for l in text.lines() {
        // "00000000000011f0 <p3_f2>:"
        if let Some(name) = l.strip_suffix(">:") {
            if let Some((a, n)) = name.split_once(" <") {
                cur = n.to_string();
                d.start
                    .insert(cur.clone(), u64::from_str_radix(a, 16).unwrap());
            }
            continue;
        }
        // "    11f4:\tcall   11ae <p3_B>"
        let Some((a, ins)) = l.trim().split_once(":\t") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(a, 16) else {
            continue;
        };
        if let Some((callee, at)) = pending.take() {
            d.calls.insert((cur.clone(), callee), (at, addr));
        }
        let ins = ins.trim();
        if ins.starts_with("call") {
            if let Some(c) = ins.split('<').nth(1) {
                pending = Some((c.trim_end_matches('>').to_string(), addr));
            }
        } else if ins.starts_with("ret") {
            d.ret.insert(cur.clone(), addr);
        }
    }
    d
}

impl Disasm {
    fn f(&self, name: &str) -> u64 {
        BASE + self.start[name]
    }
    /// The branch of `caller` calling `callee`.
    fn call(&self, caller: &str, callee: &str) -> BranchEntry {
        let (at, _) = self.calls[&(caller.to_string(), callee.to_string())];
        entry(BASE + at, self.f(callee), CALL, 0)
    }
    /// The return of `callee` into `caller`.
    fn ret(&self, callee: &str, caller: &str) -> BranchEntry {
        let (_, back) = self.calls[&(caller.to_string(), callee.to_string())];
        entry(BASE + self.ret[callee], BASE + back, RET, 0)
    }
    /// The return address in `caller` after its call of `callee`.
    fn back(&self, caller: &str, callee: &str) -> u64 {
        BASE + self.calls[&(caller.to_string(), callee.to_string())].1
    }
}

fn entry(from: u64, to: u64, ty: u64, cycles: u64) -> BranchEntry {
    BranchEntry {
        from,
        to,
        // predicted, cycles, type
        flags: 2 | (cycles << 4) | (ty << 20),
        counters: None,
    }
}

/// The binary's path in the written mmap records: where it is in the tests
/// (so perf finds it), a path of no checkout in the committed fixtures
/// (trawl finds the binary by build-id with `--debug-dir
/// fixtures/perf/bin`; perf after `perf buildid-cache -a
/// fixtures/perf/bin/lbr`).
fn bin_path(committed: bool) -> String {
    if committed {
        "/opt/trawl-fixtures/bin/lbr".into()
    } else {
        fixture_bin().join("lbr").to_string_lossy().into_owned()
    }
}

fn writer(filter: u64, path: &str) -> (PerfDataWriter, usize) {
    let mut w = PerfDataWriter::new();
    let mut at = sampling(
        1,
        0,
        T,
        sample::IP
            | sample::TID
            | sample::TIME
            | sample::PERIOD
            | sample::CALLCHAIN
            | sample::BRANCH_STACK,
    );
    at.branch_sample_type = filter;
    let ev = w.add_event(at, "cpu-clock");
    w.mmap_kernel(KBASE, 0x100_0000, KBASE, "[kernel.kallsyms]_text", 1);
    w.comm(PID, PID, "lbr", 2, true);
    let bin = fixture_bin().join("lbr");
    let bid = trawl_symbolize::build_id_of(&bin).unwrap();
    w.mmap2(
        PID,
        PID,
        BASE,
        0x10_0000,
        0,
        path,
        3,
        Some(&hex_to_bytes(&bid)),
    );
    (w, ev)
}

/// A sample `at` (address in the binary) in `leaf` with the frame-pointer
/// chain `callers` (outermost last) and branch entries (newest first).
fn smp(ev: usize, time: u64, ip: u64, callers: &[u64], branch: Vec<BranchEntry>) -> SampleOut {
    let mut callchain = vec![context::USER, ip];
    callchain.extend_from_slice(callers);
    SampleOut {
        event: ev,
        ip,
        pid: PID,
        tid: PID,
        time,
        period: T,
        callchain,
        branch,
        ..Default::default()
    }
}

/// Capture A (Fig. 8, `-j any_ret,u`, types not saved): 20 samples 100 µs
/// apart, leaves F1 ×2, F2 ×6, F3 ×2, p3_B ×5, p3_C ×5, so the execution
/// ratios are F1 10 %, F2 30 %, F3 10 %. The last sample, in F3, holds the
/// returns of F1 and F2 (F1 older) with cycle counts 6000 and 18000 (LBR
/// cycle fields are 16 bits); the
/// others hold empty branch stacks.
fn fig8(d: &Disasm, path: &str) -> (Vec<u8>, Vec<SampleOut>) {
    let (mut w, ev) = writer(BR_USER | BR_ANY_RETURN, path);
    let main_back = |f: &str| d.back("main", f);
    let leaves = [
        "F1", "F2", "F2", "F2", "p3_B", "p3_C", "F3", "p3_B", "p3_C", "F2", "p3_B", "p3_C", "F1",
        "F2", "p3_B", "p3_C", "F2", "p3_B", "p3_C", "F3",
    ];
    let mut out = Vec::new();
    for (k, f) in leaves.iter().enumerate() {
        let time = 1_000_000 + T * k as u64;
        let ip = d.f(f) + 4;
        let callers: Vec<u64> = match *f {
            "p3_B" | "p3_C" => vec![
                d.back("p3_f2", f),
                d.back("p3_f1", "p3_f2"),
                d.back("p3_A", "p3_f1"),
                d.back("p3", "p3_A"),
                main_back("p3"),
            ],
            _ => vec![main_back(f)],
        };
        let branch = if k == leaves.len() - 1 {
            let mut f2 = d.ret("F2", "main");
            f2.flags |= 18_000 << 4;
            let mut f1 = d.ret("F1", "main");
            f1.flags |= 6_000 << 4;
            // Types not saved: the filter (returns only) says what they are.
            f2.flags &= !(0xf << 20);
            f1.flags &= !(0xf << 20);
            vec![f2, f1]
        } else {
            Vec::new()
        };
        let s = smp(ev, time, ip, &callers, branch);
        w.sample(&s);
        out.push(s);
    }
    w.finished_round();
    (w.to_bytes(), out)
}

/// Capture B (`-j any_call,any_ret,u,save_type`): the sample of Fig. 10
/// in p3_C with its 16 entries, then bad and unusual stacks: 3 entries, an
/// entry to an unmapped address, kernel entries (a system call and its
/// return).
fn fig10(d: &Disasm, path: &str) -> (Vec<u8>, Vec<SampleOut>) {
    let (mut w, ev) = writer(BR_USER | BR_ANY_CALL | BR_ANY_RETURN | BR_TYPE_SAVE, path);
    let chain = [
        d.back("p3_f2", "p3_C"),
        d.back("p3_f1", "p3_f2"),
        d.back("p3_A", "p3_f1"),
        d.back("p3", "p3_A"),
        d.back("main", "p3"),
    ];
    let fig10 = vec![
        d.call("p3_f2", "p3_C"), // FROM0
        d.ret("p3_B", "p3_f2"),
        d.call("p3_f2", "p3_B"),
        d.call("p3_f1", "p3_f2"),
        d.call("p3_A", "p3_f1"),
        d.call("p3", "p3_A"), // FROM5
        d.ret("p3_A", "p3"),
        d.ret("p3_f1", "p3_A"),
        d.ret("p3_f2", "p3_f1"),
        d.ret("p3_C", "p3_f2"),
        d.call("p3_f2", "p3_C"), // FROM10
        d.ret("p3_B", "p3_f2"),
        d.call("p3_f2", "p3_B"),
        d.call("p3_f1", "p3_f2"),
        d.call("p3_A", "p3_f1"),
        d.call("p3", "p3_A"), // FROM15
    ];
    let mut out = Vec::new();
    out.push(smp(ev, 1_000_000, d.f("p3_C") + 4, &chain, fig10));
    // A short stack: F2 returned, main called F3.
    out.push(smp(
        ev,
        1_000_000 + T,
        d.f("F3") + 4,
        &[d.back("main", "F3")],
        vec![
            d.call("main", "F3"),
            d.ret("F2", "main"),
            d.call("main", "F2"),
        ],
    ));
    // A call into an address no mapping covers (a JIT without a map).
    out.push(smp(
        ev,
        1_000_000 + 2 * T,
        0x1234_5678,
        &[d.back("main", "F1")],
        vec![entry(d.f("F1") + 8, 0x1234_5000, CALL, 0)],
    ));
    // Kernel entries: a system call from F2 and its return.
    let k = KBASE + 0x150;
    let mut sysret = entry(k + 0x40, d.f("F2") + 12, SYSRET, 0);
    sysret.flags |= 1 << 30; // target privilege: user
    let mut sys = entry(d.f("F2") + 10, k, SYSCALL, 0);
    sys.flags |= 2 << 30; // target privilege: kernel
    out.push(smp(
        ev,
        1_000_000 + 3 * T,
        d.f("F2") + 14,
        &[d.back("main", "F2")],
        vec![sysret, sys],
    ));
    for s in &out {
        w.sample(s);
    }
    w.finished_round();
    (w.to_bytes(), out)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, bytes).unwrap();
    f
}

/// `perf script -F FIELD` lines, one per sample (`-G`: no call chains):
/// `brstacksym` gives "from+off/to+off/P/-/-/cycles/TYPE" per entry,
/// `brstack` the same with addresses.
fn perf_field(file: &Path, field: &str) -> Vec<String> {
    perf(&["script", "-G", "-F", field, "-i", file.to_str().unwrap()])
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

fn perf_brstack(file: &Path) -> Vec<String> {
    perf_field(file, "brstacksym")
}

fn ingest(dir: &Path, file: &Path) -> PathBuf {
    let cap = dir.join(file.file_stem().unwrap());
    ingest_file(
        file,
        &cap,
        &["--debug-dir", fixture_bin().to_str().unwrap()],
    );
    cap
}

#[test]
fn written_branch_stacks_read_back_in_perf() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = fig8(&d, &bin_path(false));
    let (b, _) = fig10(&d, &bin_path(false));
    let fa = write(dir.path(), "fig8.data", &a);
    let fb = write(dir.path(), "fig10.data", &b);
    // perf names both ends from the binary: Fig. 10's stack, newest first.
    let lines = perf_brstack(&fb);
    let first = &lines[0];
    let syms = perf_field(&fb, "ip,sym");
    assert!(syms[0].ends_with("p3_C"), "{syms:?}");
    let want = [
        "p3_f2", "p3_B", "p3_f2", "p3_f1", "p3_A", "p3", "p3_A", "p3_f1", "p3_f2", "p3_C", "p3_f2",
        "p3_B", "p3_f2", "p3_f1", "p3_A", "p3",
    ];
    let froms: Vec<&str> = first
        .split_whitespace()
        .map(|e| e.split('/').next().unwrap().split('+').next().unwrap())
        .collect();
    assert_eq!(froms, want, "perf script brstacksym sources: {first}");
    // The raw addresses and types, entry by entry, as written.
    let (_, samples) = fig10(&d, &bin_path(false));
    let raw = perf_field(&fb, "brstack");
    for (l, s) in raw.iter().zip(&samples) {
        let got: Vec<(u64, u64, String)> = l
            .split_whitespace()
            .map(|e| {
                let p: Vec<&str> = e.split('/').collect();
                let h = |x: &str| u64::from_str_radix(x.trim_start_matches("0x"), 16).unwrap();
                (h(p[0]), h(p[1]), p[6].to_string())
            })
            .collect();
        let want: Vec<(u64, u64, String)> = s
            .branch
            .iter()
            .map(|e| {
                let t = match e.br_type() {
                    4 => "CALL",
                    6 => "RET",
                    7 => "SYSCALL",
                    8 => "SYSRET",
                    _ => "-",
                };
                (e.from, e.to, t.to_string())
            })
            .collect();
        assert_eq!(got, want, "perf script -F brstack: {l}");
    }
    // Fig. 8: the F3 sample's entries are the returns of F2 and F1.
    let last = perf_brstack(&fa).pop().unwrap();
    let froms: Vec<&str> = last
        .split_whitespace()
        .map(|e| e.split('/').next().unwrap().split('+').next().unwrap())
        .collect();
    assert_eq!(froms, ["F2", "F1"], "{last}");
    let tos: Vec<&str> = last
        .split_whitespace()
        .map(|e| e.split('/').nth(1).unwrap().split('+').next().unwrap())
        .collect();
    assert_eq!(tos, ["main", "main"], "{last}");
}

#[test]
fn branch_table_matches_perf_script() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (b, samples) = fig10(&d, &bin_path(false));
    let fb = write(dir.path(), "fig10.data", &b);
    let cap = ingest(dir.path(), &fb);
    let rows = sql_rows(
        &cap,
        "SELECT sample_id, idx, from_ip, to_ip, from_function, to_function, transfer, from_module, to_module \
         FROM branch ORDER BY sample_id, idx",
    );
    let n: usize = samples.iter().map(|s| s.branch.len()).sum();
    assert_eq!(rows.len(), n);
    // Same sources and targets as perf script's brstacksym (perf names
    // unmapped addresses [unknown], trawl by their address; perf names
    // the written kernel addresses from this machine's /proc/kallsyms,
    // trawl only from the recorded kernel's symbols, which a written file
    // lacks: kernel ends are compared by module).
    let lines = perf_brstack(&fb);
    let mut k = 0;
    for l in &lines {
        for e in l.split_whitespace() {
            let p: Vec<&str> = e.split('/').collect();
            let name = |s: &str| s.split('+').next().unwrap().to_string();
            let r = &rows[k];
            if r[7] == "[kernel.kallsyms]" {
                assert!(r[4].starts_with("0xffffffff81"), "{r:?}");
            } else if !name(p[0]).starts_with("[unknown]") {
                assert_eq!(r[4], name(p[0]), "from of row {r:?} vs perf {e}");
            }
            if r[8] == "[kernel.kallsyms]" {
                assert!(r[5].starts_with("0xffffffff81"), "{r:?}");
            } else if !name(p[1]).starts_with("[unknown]") {
                assert_eq!(r[5], name(p[1]), "to of row {r:?} vs perf {e}");
            }
            k += 1;
        }
    }
    assert_eq!(k, n, "perf script printed every entry");
    // Fig. 10: calls and returns as saved.
    let fig: Vec<&Vec<String>> = rows.iter().filter(|r| r[0] == rows[0][0]).collect();
    assert_eq!(fig.len(), 16);
    assert_eq!(fig[0][6], "call");
    assert_eq!(fig[1][6], "return");
    // The unmapped target keeps its address as its name.
    let unmapped = rows
        .iter()
        .find(|r| r[3] == 0x1234_5000u64.to_string())
        .unwrap();
    assert_eq!(unmapped[5], "0x0000000012345000");
    assert_eq!(unmapped[4], "F1");
    // Kernel entries: the system call's target and the return's source
    // are kernel frames; the transfer follows the saved type.
    let k_rows: Vec<&Vec<String>> = rows
        .iter()
        .filter(|r| r[7] == "[kernel.kallsyms]")
        .collect();
    assert_eq!(k_rows.len(), 1, "{rows:?}");
    assert_eq!(k_rows[0][6], "return");
    let sys = rows
        .iter()
        .find(|r| r[6] == "call" && r[4] == "F2")
        .unwrap();
    assert_eq!(
        (sys[1].as_str(), sys[8].as_str()),
        ("1", "[kernel.kallsyms]")
    );
}

#[test]
fn fig10_sequence_stacks_and_transitions() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = fig10(&d, &bin_path(false));
    let cap = ingest(dir.path(), &write(dir.path(), "fig10.data", &b));
    // The sequence, oldest first, then the sampled function (Fig. 10).
    let seq = csv_maps(&trawl_ok(&[
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--view",
        "sequence",
        "--sample",
        "0",
        "--format",
        "csv",
    ]));
    let got: Vec<(String, String)> = seq
        .iter()
        .map(|r| (r["entry"].clone(), r["function"].clone()))
        .collect();
    let want = [
        ("FROM15", "p3"),
        ("FROM14", "p3_A"),
        ("FROM13", "p3_f1"),
        ("FROM12", "p3_f2"),
        ("FROM11", "p3_B"),
        ("FROM10", "p3_f2"),
        ("FROM9", "p3_C"),
        ("FROM8", "p3_f2"),
        ("FROM7", "p3_f1"),
        ("FROM6", "p3_A"),
        ("FROM5", "p3"),
        ("FROM4", "p3_A"),
        ("FROM3", "p3_f1"),
        ("FROM2", "p3_f2"),
        ("FROM1", "p3_B"),
        ("FROM0", "p3_f2"),
        ("sample", "p3_C"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
    // The call stack rebuilt at each entry's source, walking back from the
    // sample's stack [p3_C p3_f2 p3_f1 p3_A p3 main] (worked by hand: a call
    // pops the callee, a return pushes the function returned from).
    let stacks = sql_rows(
        &cap,
        "SELECT b.idx, string_agg(e.function, ' ' ORDER BY e.pos) \
         FROM perf_branch b JOIN stack_entry e ON e.segment = b.segment AND e.stack_id = b.stack_id \
         WHERE b.sample_id = 0 GROUP BY b.idx ORDER BY b.idx",
    );
    let outer = "p3 main";
    let want = [
        format!("p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_B p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_f1 p3_A {outer}"),
        format!("p3_A {outer}"),
        outer.to_string(),
        format!("p3_A {outer}"),
        format!("p3_f1 p3_A {outer}"),
        format!("p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_C p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_B p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_f2 p3_f1 p3_A {outer}"),
        format!("p3_f1 p3_A {outer}"),
        format!("p3_A {outer}"),
        outer.to_string(),
    ];
    let got: Vec<String> = stacks.iter().map(|r| r[1].clone()).collect();
    assert_eq!(got, want);
    // Transitions of the Fig. 10 sample: 2 of each call, returns as seen.
    let tr = csv_maps(&trawl_ok(&[
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--view",
        "transitions",
        "--format",
        "csv",
    ]));
    let count = |from: &str, to: &str, t: &str| {
        tr.iter()
            .find(|r| r["from_function"] == from && r["to_function"] == to && r["transfer"] == t)
            .map_or(0, |r| r["entries"].parse::<i64>().unwrap())
    };
    for (a, b) in [
        ("p3_f2", "p3_C"),
        ("p3_f2", "p3_B"),
        ("p3_f1", "p3_f2"),
        ("p3_A", "p3_f1"),
        ("p3", "p3_A"),
    ] {
        assert_eq!(count(a, b, "call"), 2, "{a} -> {b}");
    }
    assert_eq!(count("p3_B", "p3_f2", "return"), 2);
    for (a, b) in [
        ("p3_A", "p3"),
        ("p3_f1", "p3_A"),
        ("p3_f2", "p3_f1"),
        ("p3_C", "p3_f2"),
    ] {
        assert_eq!(count(a, b, "return"), 1, "{a} -> {b}");
    }
    // The short stack's main -> F3 and F2 -> main.
    assert_eq!(count("main", "F3", "call"), 1);
    assert_eq!(count("F2", "main", "return"), 1);
}

/// (function, time_ns relative to the F3 sample, weight_ns) of the F3
/// sample's points under `method`.
fn points(cap: &Path, method: &str, extra: &[&str]) -> Vec<(String, i64, f64)> {
    let mut args = vec![
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--view",
        "points",
        "--sample",
        "19",
        "--method",
        method,
        "--format",
        "csv",
    ];
    args.extend_from_slice(extra);
    let rows = csv_maps(&trawl_ok(&args));
    let t = 1_000_000 + 19 * T as i64;
    rows.iter()
        .map(|r| {
            (
                r["function"].clone(),
                r["time_ns"].parse::<i64>().unwrap() - t,
                r["weight_ns"].parse::<f64>().unwrap(),
            )
        })
        .collect()
}

fn close(got: &[(String, i64, f64)], want: &[(&str, i64, f64)]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.0, w.0, "{got:?}");
        assert!(
            (g.1 - w.1).abs() <= 1,
            "time of {}: {got:?} vs {want:?}",
            w.0
        );
        assert!(
            (g.2 - w.2).abs() < 0.01,
            "weight of {}: {got:?} vs {want:?}",
            w.0
        );
    }
}

#[test]
fn fig8_methods_by_hand() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = fig8(&d, &bin_path(false));
    let cap = ingest(dir.path(), &write(dir.path(), "fig8.data", &a));
    // Returns-only filter without saved types: both entries are returns.
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT string_agg(CAST(transfer AS VARCHAR), '+') FROM perf_branch"
        ),
        "return+return"
    );
    // T = 100 µs before the F3 sample; ratios F1 10 %, F2 30 %, F3 10 %;
    // entries F1 (older), F2. Slices oldest first, each point at its end.
    // 0: F3 alone.
    close(&points(&cap, "0", &[]), &[("F3", 0, 100_000.0)]);
    // 1: thirds.
    close(
        &points(&cap, "1", &[]),
        &[
            ("F1", -66_667, 33_333.333),
            ("F2", -33_333, 33_333.333),
            ("F3", 0, 33_333.333),
        ],
    );
    // 2: F1 10 % of T, F2 30 %, F3 the remaining 60 %.
    close(
        &points(&cap, "2", &[]),
        &[
            ("F1", -90_000, 10_000.0),
            ("F2", -60_000, 30_000.0),
            ("F3", 0, 60_000.0),
        ],
    );
    // 3: 10 : 30 : 10 of T.
    close(
        &points(&cap, "3", &[]),
        &[
            ("F1", -80_000, 20_000.0),
            ("F2", -20_000, 60_000.0),
            ("F3", 0, 20_000.0),
        ],
    );
    // cycles at 0.6 GHz: 6000 and 18000 cycles = 10 and 30 µs; F3 the
    // rest.
    close(
        &points(&cap, "cycles", &["--ghz", "0.6"]),
        &[
            ("F1", -90_000, 10_000.0),
            ("F2", -60_000, 30_000.0),
            ("F3", 0, 60_000.0),
        ],
    );
    // cycles, clock estimated: 24000 cycles in 100 µs → 0.24 GHz, the
    // entries fill the interval.
    close(
        &points(&cap, "cycles", &[]),
        &[
            ("F1", -75_000, 25_000.0),
            ("F2", 0, 75_000.0),
            ("F3", 0, 0.0),
        ],
    );
    // Resolution: 20 samples, 2 entries: 22 points (1.1 per sample).
    let sum = csv_maps(&trawl_ok(&[
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--view",
        "summary",
        "--method",
        "cycles",
        "--format",
        "csv",
    ]));
    assert_eq!(sum[0]["samples"], "20");
    assert_eq!(sum[0]["entries"], "2");
    assert_eq!(sum[0]["points"], "22");
    assert_eq!(sum[0]["points_per_sample"], "1.1");
    assert_eq!(sum[0]["ghz"], "0.24");
    // Functions under method 3: F1 gains 20 µs over its two samples.
    let f = csv_maps(&trawl_ok(&[
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--method",
        "3",
        "--format",
        "csv",
    ]));
    let time = |n: &str| -> f64 {
        f.iter().find(|r| r["function"] == n).unwrap()["time_ms"]
            .parse()
            .unwrap()
    };
    assert!((time("F1") - 0.22).abs() < 1e-9, "{f:?}");
    assert!((time("F2") - 0.66).abs() < 1e-9, "{f:?}");
    assert!((time("F3") - 0.12).abs() < 1e-9, "{f:?}");
    // The total is still the sampled time: 20 × 100 µs.
    let total: f64 = f.iter().map(|r| r["time_ms"].parse::<f64>().unwrap()).sum();
    assert!((total - 2.0).abs() < 1e-6);
}

#[test]
fn time_window_reports_take_pseudo_samples() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = fig8(&d, &bin_path(false));
    let cap = ingest(dir.path(), &write(dir.path(), "fig8.data", &a));
    // The timeline in 20 µs windows from the first sample (t0 = first =
    // 1 ms): the last interval [2.8 ms, 2.9 ms) under method 3 puts F1's
    // point at 2.82 ms, F2's at 2.88 ms, F3 at 2.9 ms.
    let tl = csv_maps(&trawl_ok(&[
        "report",
        "timeline",
        cap.to_str().unwrap(),
        "--window",
        "20us",
        "--lbr",
        "3",
        "--format",
        "csv",
    ]));
    let at = |f: &str| {
        tl.iter()
            .filter(|r| r["function"] == f)
            .map(|r| {
                (
                    (r["window_start_s"].parse::<f64>().unwrap() * 1e6).round() as i64,
                    r["cost"].parse::<i64>().unwrap(),
                    r["method"].clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert!(
        at("F1").contains(&(1820, 20_000, "3".into())),
        "{:?}",
        at("F1")
    );
    assert!(
        at("F2").contains(&(1880, 60_000, "3".into())),
        "{:?}",
        at("F2")
    );
    assert!(
        at("F3").contains(&(1900, 20_000, "3".into())),
        "{:?}",
        at("F3")
    );
    // Without --lbr the same window holds only the sample.
    let plain = csv_maps(&trawl_ok(&[
        "report",
        "timeline",
        cap.to_str().unwrap(),
        "--window",
        "20us",
        "--format",
        "csv",
    ]));
    assert!(plain
        .iter()
        .all(|r| !(r["function"] == "F1" && r["window_start_s"].starts_with("0.00182"))));
    // Causes of CPU use in the last interval: F1, F2 and F3 by method 2.
    let c = csv_maps(&trawl_ok(&[
        "report",
        "cause",
        cap.to_str().unwrap(),
        "--resource",
        "cpu",
        "--range",
        "+0.0018..+0.0019",
        "--lbr",
        "2",
        "--app",
        fixture_bin().to_str().unwrap(),
        "--format",
        "csv",
    ]));
    let ns = |f: &str| -> f64 {
        c.iter()
            .filter(|r| r["actual_function"] == f)
            .map(|r| r["cpu_ns"].parse::<f64>().unwrap())
            .sum()
    };
    assert_eq!((ns("F1"), ns("F2")), (10_000.0, 30_000.0), "{c:?}");
}

#[test]
fn lbr_report_needs_branch_stacks() {
    let cap_dir = tempfile::tempdir().unwrap();
    let cap = cap_dir.path().join("c");
    ingest_file(&fixture("hot-fp.data"), &cap, &["--no-symbolize"]);
    let o = trawl(&["report", "lbr", cap.to_str().unwrap()]);
    assert_refused(&o, "no branch stacks");
    assert!(String::from_utf8_lossy(&o.stderr).contains("no branch stacks"));
    let o = trawl(&["report", "lbr", cap.to_str().unwrap(), "--method", "7"]);
    assert_refused(&o, "expected 0, 1, 2, 3 or cycles");
}

/// The committed `fixtures/perf/lbr-fig8.data` and `lbr-fig10.data` are
/// what this file's writers produce (with the binary at
/// `/opt/trawl-fixtures/bin/lbr`);
/// `TRAWL_WRITE_FIXTURES=1` rewrites them.
#[test]
fn committed_fixtures_are_the_written_ones() {
    let d = disasm();
    let path = bin_path(true);
    for (name, bytes) in [
        ("lbr-fig8.data", fig8(&d, &path).0),
        ("lbr-fig10.data", fig10(&d, &path).0),
    ] {
        let f = fixture(name);
        if std::env::var_os("TRAWL_WRITE_FIXTURES").is_some() {
            std::fs::write(&f, &bytes).unwrap();
        }
        assert!(
            std::fs::read(&f).unwrap() == bytes,
            "{name} differs from the writer's output: rerun with TRAWL_WRITE_FIXTURES=1"
        );
    }
}

/// Branch stacks that repeat the thread's previous one (Ono et al. 2014,
/// §4.2: only "the branch information accumulated since the previous
/// interrupt" counts). Two threads of one process take turns on CPU 0,
/// 100 µs apart, with 4-entry stacks; each dynamic branch has its own
/// cycle count, as hardware entries do. Thread A's branches, oldest
/// first: 0 call main→F1, 1 ret F1→main, 2 call main→F2, 3 ret F2→main,
/// 4 call main→F3, 5 ret F3→main, then 6-11 the same six again; thread
/// B's: call main→F1, ret F1→main, twice.
///
///   sample  thread  stack (newest first)  repeated (by hand)
///   0       A       3 2 1 0               none: the first
///   1       B       b3 b2 b1 b0           none: the first of B
///   2       A       5 4 3 2               3 2 (A's 0 was the last before)
///   3       B       b3 b2 b1 b0           all: no branch since sample 1
///   4       A       5 4 3 2               all: no branch since sample 2
///   5       A       11 10 9 8             none: 6 and 7 were overwritten
fn overlapping(d: &Disasm, path: &str) -> (Vec<u8>, Vec<SampleOut>) {
    let (mut w, ev) = writer(BR_USER | BR_ANY_CALL | BR_ANY_RETURN | BR_TYPE_SAVE, path);
    let tid_b = PID + 1;
    w.comm(PID, tid_b, "lbr", 4, false);
    let cyc = |mut e: BranchEntry, c: u64| {
        e.flags |= c << 4;
        e
    };
    let six = |k: u64| -> Vec<BranchEntry> {
        vec![
            cyc(d.call("main", "F1"), 100 + k),
            cyc(d.ret("F1", "main"), 101 + k),
            cyc(d.call("main", "F2"), 102 + k),
            cyc(d.ret("F2", "main"), 103 + k),
            cyc(d.call("main", "F3"), 104 + k),
            cyc(d.ret("F3", "main"), 105 + k),
        ]
    };
    let a: Vec<BranchEntry> = [six(0), six(6)].concat();
    let b: Vec<BranchEntry> = vec![
        cyc(d.call("main", "F1"), 500),
        cyc(d.ret("F1", "main"), 501),
        cyc(d.call("main", "F1"), 502),
        cyc(d.ret("F1", "main"), 503),
    ];
    // Branches `lo..=hi` of a sequence, newest first.
    let stack = |s: &[BranchEntry], lo: usize, hi: usize| -> Vec<BranchEntry> {
        s[lo..=hi].iter().rev().copied().collect()
    };
    let plan = [
        (PID, stack(&a, 0, 3)),
        (tid_b, stack(&b, 0, 3)),
        (PID, stack(&a, 2, 5)),
        (tid_b, stack(&b, 0, 3)),
        (PID, stack(&a, 2, 5)),
        (PID, stack(&a, 8, 11)),
    ];
    let mut out = Vec::new();
    for (k, (tid, branch)) in plan.into_iter().enumerate() {
        let mut s = smp(ev, 1_000_000 + T * k as u64, d.f("main") + 4, &[], branch);
        s.tid = tid;
        s.cpu = 0;
        w.sample(&s);
        out.push(s);
    }
    w.finished_round();
    (w.to_bytes(), out)
}

#[test]
fn entries_repeated_from_the_previous_stack_count_once() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (bytes, _) = overlapping(&d, &bin_path(false));
    let file = write(dir.path(), "overlap.data", &bytes);
    // perf reads the stacks as written: samples 3 and 4 print exactly as
    // samples 1 and 2.
    let perf_lines = perf_field(&file, "tid,brstack");
    assert_eq!(perf_lines.len(), 6, "{perf_lines:?}");
    let stack_of = |l: &str| l.split_once(' ').unwrap().1.trim().to_string();
    assert_eq!(stack_of(&perf_lines[3]), stack_of(&perf_lines[1]));
    assert_eq!(stack_of(&perf_lines[4]), stack_of(&perf_lines[2]));
    assert_ne!(stack_of(&perf_lines[2]), stack_of(&perf_lines[0]));

    let cap = ingest(dir.path(), &file);
    let flags: Vec<String> = sql_rows(
        &cap,
        "SELECT sample_id, string_agg(CASE WHEN repeated THEN 'r' ELSE '.' END, '' ORDER BY idx) \
         FROM perf_branch GROUP BY sample_id ORDER BY sample_id",
    )
    .iter()
    .map(|r| r.join(","))
    .collect();
    assert_eq!(
        flags,
        ["0,....", "1,....", "2,..rr", "3,rrrr", "4,rrrr", "5,...."]
    );
    // The summary: 24 entries recorded, 4 + 4 + 2 + 0 + 0 + 4 new; with
    // method 1 the points are the 6 samples and the 14 new entries.
    let sum = csv_maps(&trawl_ok(&[
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--view",
        "summary",
        "--method",
        "1",
        "--format",
        "csv",
    ]));
    assert_eq!(sum[0]["entries"], "24");
    assert_eq!(sum[0]["new_entries"], "14");
    assert_eq!(sum[0]["points"], "20");
    // Method 1 on sample 2: its 100 µs in thirds between its two new
    // entries (branch 4 from main, 5 from F3) and the sample; sample 4
    // keeps its interval.
    let pts = |id: &str| -> Vec<(String, f64)> {
        csv_maps(&trawl_ok(&[
            "report",
            "lbr",
            cap.to_str().unwrap(),
            "--view",
            "points",
            "--sample",
            id,
            "--method",
            "1",
            "--format",
            "csv",
        ]))
        .iter()
        .map(|r| (r["function"].clone(), r["weight_ns"].parse().unwrap()))
        .collect()
    };
    let third = 100_000.0 / 3.0;
    let p2 = pts("2");
    assert_eq!(p2.len(), 3, "{p2:?}");
    assert_eq!(
        p2.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(),
        ["main", "F3", "main"]
    );
    assert!(p2.iter().all(|p| (p.1 - third).abs() < 0.01), "{p2:?}");
    assert_eq!(pts("4"), [("main".to_string(), 100_000.0)]);
    // Transitions count each branch once: A took main→F2 twice (branches
    // 2 and 8), main→F1 once (0), B took it twice.
    let tr = csv_maps(&trawl_ok(&[
        "report",
        "lbr",
        cap.to_str().unwrap(),
        "--view",
        "transitions",
        "--format",
        "csv",
    ]));
    let get = |from: &str, to: &str| {
        let r = tr
            .iter()
            .find(|r| {
                r["from_function"] == from && r["to_function"] == to && r["transfer"] == "call"
            })
            .unwrap_or_else(|| panic!("{from}->{to}: {tr:?}"));
        (r["entries"].clone(), r["repeats"].clone())
    };
    // main→F2: new in samples 0 and 5, repeated in 2 and 4.
    assert_eq!(get("main", "F2"), ("2".into(), "2".into()));
    // main→F1: A's branch 0 (sample 0), B's two (sample 1), B's two again
    // in sample 3.
    assert_eq!(get("main", "F1"), ("3".into(), "2".into()));
    // main→F3: new in samples 2 (branch 4) and 5 (10), repeated in 4.
    assert_eq!(get("main", "F3"), ("2".into(), "1".into()));
}

/// PERF_SAMPLE_BRANCH_CALL_STACK (`perf record --call-graph lbr`: USER |
/// CALL_STACK | NO_CYCLES | NO_FLAGS).
const BR_CALL_STACK: u64 = 1 << 11;
const BR_NO_FLAGS: u64 = 1 << 14;
const BR_NO_CYCLES: u64 = 1 << 15;

/// A `--call-graph lbr` capture of code without frame pointers, as the
/// kernel writes it: the callchain holds the interrupted user address and
/// what a frame-pointer walk of that code finds (junk: here one address
/// no mapping covers), the branch stack the calls still on the stack,
/// innermost first. Sample 0 in p3_C (user mode); sample 1 in F2; sample
/// 2 in the kernel (a system call from F2), its callchain the kernel's
/// frames, then the user context.
fn call_stack(d: &Disasm, path: &str) -> (Vec<u8>, Vec<SampleOut>) {
    let (mut w, ev) = writer(BR_USER | BR_CALL_STACK | BR_NO_CYCLES | BR_NO_FLAGS, path);
    let junk = 0x0000_0070_0000_0000;
    let p3_c = vec![
        d.call("p3_f2", "p3_C"),
        d.call("p3_f1", "p3_f2"),
        d.call("p3_A", "p3_f1"),
        d.call("p3", "p3_A"),
        d.call("main", "p3"),
    ];
    let mut out = vec![
        smp(ev, 1_000_000, d.f("p3_C") + 4, &[junk], p3_c),
        smp(
            ev,
            1_000_000 + T,
            d.f("F2") + 4,
            &[junk],
            vec![d.call("main", "F2")],
        ),
    ];
    let mut k = smp(
        ev,
        1_000_000 + 2 * T,
        KBASE + 0x150,
        &[],
        vec![d.call("main", "F2")],
    );
    k.callchain = vec![
        context::KERNEL,
        KBASE + 0x150,
        KBASE + 0x2a0,
        context::USER,
        d.f("F2") + 12,
        junk,
    ];
    k.misc = 1; // PERF_RECORD_MISC_KERNEL
    out.push(k);
    for s in &out {
        w.sample(s);
    }
    w.finished_round();
    (w.to_bytes(), out)
}

/// LBR call stacks: the user part of each stack is the interrupted user
/// address, then the calls of the branch stack (perf's
/// `resolve_lbr_callchain_sample`), never the frame-pointer walk's junk;
/// the sampled address is the leaf. Expected: `perf script -F
/// ip,sym`'s callchains on the same file (user frames by function: perf
/// shows the first call's target, the function's start, where trawl keeps
/// the sampled address in it), and perf report's self cost per function.
#[test]
fn call_stack_mode_stacks_match_perf() {
    let d = disasm();
    let dir = tempfile::tempdir().unwrap();
    let (bytes, samples) = call_stack(&d, &bin_path(false));
    let f = write(dir.path(), "callstack.data", &bytes);
    let out = perf(&["script", "-F", "ip,sym", "-i", f.to_str().unwrap()]);
    let perf_stacks: Vec<Vec<String>> = out
        .split("\n\n")
        .map(|b| {
            b.lines()
                .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
                .collect::<Vec<_>>()
        })
        .filter(|v| !v.is_empty())
        .collect();
    assert_eq!(perf_stacks.len(), samples.len(), "{out}");
    assert_eq!(
        perf_stacks[0],
        ["p3_C", "p3_f2", "p3_f1", "p3_A", "p3", "main"],
        "{out}"
    );
    let cap = ingest(dir.path(), &f);
    for (i, want) in perf_stacks.iter().enumerate() {
        let got: Vec<String> = sql_rows(
            &cap,
            &format!(
                "SELECT coalesce(e.function, e.module) FROM perf_sample s \
                 JOIN stack_entry e USING (segment, stack_id) \
                 WHERE s.sample_id = {i} AND e.inline_depth = 0 ORDER BY e.pos"
            ),
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        // Kernel frames (those the written callchain has before its user
        // context): perf names them from this machine's kallsyms, trawl
        // not at all (a written file has no kernel symbols): compared by
        // count.
        let cc = &samples[i].callchain;
        let k = cc.iter().position(|&v| v == context::USER).unwrap_or(0)
            - cc.iter().filter(|&&v| v == context::KERNEL).count();
        assert_eq!(got.len(), want.len(), "sample {i}: {got:?} / perf {want:?}");
        assert_eq!(got[k..], want[k..], "sample {i}: {got:?} / perf {want:?}");
    }
    // Self cost: perf report's, by function (percentage and samples).
    let named = self_cost_as_perf_report(&f, &cap);
    for f in ["p3_C", "F2"] {
        assert!(
            named.iter().any(|n| n == f),
            "perf report has no {f}: {named:?}"
        );
    }
}

/// A `--call-graph lbr` recording of a statically linked C++ program from
/// another machine (KDAB perfparser's test data, fixtures/corpus/
/// perfparser): self cost per function as `perf report --no-children`
/// gives it on the same file and binary, percentage and samples. One
/// sample is in user mode with a kernel frame in its callchain: perf
/// counts it for its ip's function (`std::vector<double>::
/// _M_realloc_insert<double>`, 6.35 %), and so must trawl.
#[test]
fn static_cxx_lbr_recording_self_cost_as_perf_report() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = root().join("fixtures/corpus/perfparser");
    let bin_dir = dir.path().join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let bin = bin_dir.join("vector_static_gcc_v9.1.0");
    let z = std::fs::File::open(corpus.join("vector_static_gcc_v9.1.0.zst")).unwrap();
    std::fs::write(&bin, zstd::decode_all(z).unwrap()).unwrap();
    // perf finds the binary by its build-id, in its cache.
    perf(&["buildid-cache", "-a", bin.to_str().unwrap()]);
    let data = corpus.join("perf.lbr.data");
    let cap = dir.path().join("cap");
    trawl_ok(&[
        "ingest",
        data.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
        "--debug-dir",
        bin_dir.to_str().unwrap(),
    ]);
    let named = self_cost_as_perf_report(&data, &cap);
    assert!(
        named.iter().any(|n| n.contains("_M_realloc_insert")),
        "{named:?}"
    );
    assert!(named.len() >= 7, "{named:?}");
}

/// Every user function `perf report --no-children` names in `data` has
/// trawl's self samples and percentage in `cap` (perf names a C++
/// function without its return type and parameters, trawl with them, as
/// `nm -C` does); the functions compared.
fn self_cost_as_perf_report(data: &Path, cap: &Path) -> Vec<String> {
    let mine = crate::perf_fixtures::trawl_hotspots(cap);
    let mut named = Vec::new();
    for r in crate::perf_fixtures::perf_report(data, false)
        .iter()
        .filter(|r| crate::perf_fixtures::is_user_symbol(r))
    {
        let m = mine
            .iter()
            .find(|((dso, f), _)| *dso == r.dso && same_cxx_function(f, &r.sym))
            .map(|(_, m)| m)
            .unwrap_or_else(|| {
                panic!(
                    "perf has {} {} ({}%), trawl does not",
                    r.dso, r.sym, r.self_pct
                )
            });
        assert_eq!(m.self_samples, r.samples, "self samples of {}", r.sym);
        assert!(
            (m.self_pct - r.self_pct).abs() <= 0.0051,
            "self % of {}: trawl {} perf {}",
            r.sym,
            m.self_pct,
            r.self_pct
        );
        named.push(r.sym.clone());
    }
    named
}

/// `full` (a demangled name with return type and parameters, `void
/// ns::f<int>(int)`) names the function perf names `short` (`ns::f<int>`).
fn same_cxx_function(full: &str, short: &str) -> bool {
    if full == short {
        return true;
    }
    // Without the last top-level parenthesized group (the parameters).
    let mut depth = 0i32;
    let mut cut = full.len();
    for (i, c) in full.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    cut = i;
                    break;
                }
            }
            _ => {}
        }
    }
    let base = &full[..cut];
    base == short || base.ends_with(&format!(" {short}"))
}
