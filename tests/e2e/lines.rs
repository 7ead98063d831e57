//! Source lines and inline chains: every symbolized address of the
//! fixtures against binutils `addr2line -f -i -C` (and `llvm-addr2line`
//! where binutils 2.40 misreads DWARF 5 file tables), libc included through
//! its separate debug file; `--by srcline` hotspots against
//! `perf report --no-children --sort srcline`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// One inline level as (function, file base name, line).
type Level = (String, String, u32);
/// Offset -> levels of the address (None: no line), innermost first.
type Levels = HashMap<u64, Vec<Option<Level>>>;

fn base(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Runs an addr2line-compatible tool with `-a -f -i -C` on `addrs` of
/// `file`; returns each address's levels, innermost first (None for `??`).
fn addr2line(tool: &str, file: &str, addrs: &[u64]) -> HashMap<u64, Vec<Option<Level>>> {
    let mut args = vec!["-a", "-f", "-i", "-C", "-e", file];
    let hex: Vec<String> = addrs.iter().map(|a| format!("{a:#x}")).collect();
    args.extend(hex.iter().map(String::as_str));
    let out = Command::new(tool)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("{tool}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut res: HashMap<u64, Vec<Option<Level>>> = HashMap::new();
    let mut cur = 0;
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if let Some(h) = l.strip_prefix("0x") {
            cur = u64::from_str_radix(h, 16).unwrap();
            res.entry(cur).or_default();
            continue;
        }
        let func = l.to_string();
        let loc = lines.next().unwrap_or("??:0");
        let loc = loc.split(" (discriminator").next().unwrap();
        let (file, line) = loc.rsplit_once(':').unwrap_or((loc, "0"));
        let line: u32 = line.parse().unwrap_or(0);
        let level = (func != "??" && line > 0).then(|| (func, base(file), line));
        res.entry(cur).or_default().push(level);
    }
    res
}

/// Virtual address of file offset `off` of `elf`, from `readelf -lW`.
fn offset_to_vaddr(elf: &str, off: u64) -> Option<u64> {
    let out = Command::new("readelf")
        .args(["-lW", elf])
        .output()
        .expect("readelf (binutils)");
    for l in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() == Some(&"LOAD") {
            let p = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
            let (o, v, sz) = (p(f[1]), p(f[2]), p(f[4]));
            if off >= o && off < o + sz {
                return Some(off - o + v);
            }
        }
    }
    None
}

/// Symbol name -> address, from `nm` (binutils) on an ELF file.
fn nm_addresses(file: &str) -> HashMap<String, u64> {
    let out = Command::new("nm").arg(file).output().expect("nm");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let a = u64::from_str_radix(it.next()?, 16).ok()?;
            let _t = it.next()?;
            Some((it.next()?.to_string(), a))
        })
        .collect()
}

/// ELF local-symbol suffixes gcc adds to clones; DWARF names the original.
fn strip_clone_suffix(s: &str) -> &str {
    s.split('.').next().unwrap_or(s)
}

fn check_lines_against_addr2line(name: &str) -> usize {
    let (_t, cap) = ingest(name);
    let out = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT s.rel_pc, s.inline_depth, s.function, s.file, s.line, f.binary, f.debug_info \
         FROM symbol s JOIN symbol_file f USING (segment, module_id) \
         WHERE f.debug_info IS NOT NULL ORDER BY f.debug_info, s.rel_pc, s.inline_depth",
        "--format",
        "csv",
    ]);
    // (debug file, binary) -> offset -> levels
    let mut mine: HashMap<(String, String), Levels> = HashMap::new();
    for r in csv_maps(&out) {
        let lvl = (!r["line"].is_empty()).then(|| {
            (
                r["function"].clone(),
                base(&r["file"]),
                r["line"].parse().unwrap(),
            )
        });
        mine.entry((r["debug_info"].clone(), r["binary"].clone()))
            .or_default()
            .entry(r["rel_pc"].parse().unwrap())
            .or_default()
            .push(lvl);
    }
    let mut checked = 0;
    for ((debug, binary), addrs) in &mine {
        let mut nm = None;
        let offs: Vec<u64> = addrs.keys().copied().collect();
        let vaddrs: Vec<u64> = offs
            .iter()
            .map(|&o| offset_to_vaddr(binary, o).expect("offset in a PT_LOAD"))
            .collect();
        let gnu = addr2line("addr2line", debug, &vaddrs);
        let llvm = addr2line("llvm-addr2line", debug, &vaddrs);
        for (off, va) in offs.iter().zip(&vaddrs) {
            let m = &addrs[off];
            let g = &gnu[va];
            if g.iter().all(Option::is_none) {
                // No line for the address (PLT stubs, assembly without
                // line info): trawl must not invent one.
                assert!(
                    m.iter().all(Option::is_none),
                    "{name} {debug} {va:#x}: {m:?}"
                );
                continue;
            }
            assert_eq!(
                m.len(),
                g.len(),
                "{name} {debug} {va:#x}: levels {m:?} vs {g:?}"
            );
            let l = &llvm[va];
            for (k, (mm, gg)) in m.iter().zip(g).enumerate() {
                let (mf, mfile, mline) = mm.clone().expect("trawl has a line");
                let (gf, gfile, gline) = gg.clone().unwrap();
                assert_eq!(mline, gline, "{name} {debug} {va:#x} level {k}: line");
                // binutils 2.40 names the wrong file of a DWARF 5 line
                // table now and then (libc_start_call_main.h vs
                // libc-start.c); llvm-addr2line is the tie-breaker.
                let lfile = l.get(k).cloned().flatten().map(|x| x.1);
                assert!(
                    mfile == gfile || Some(&mfile) == lfile.as_ref(),
                    "{name} {debug} {va:#x} level {k}: file {mfile} vs {gfile} / {lfile:?}"
                );
                if k + 1 < m.len() {
                    // Inlined levels: DWARF names, exactly.
                    assert_eq!(mf, gf, "{name} {debug} {va:#x} level {k}: function");
                } else {
                    // The outermost level carries the ELF symbol perf
                    // shows; DWARF names the same function: without gcc's
                    // clone suffix (`.part.0`), or by an alias at the same
                    // address (nm: memmove/memcpy, __GI_ names).
                    let syms = nm.get_or_insert_with(|| nm_addresses(debug));
                    assert!(
                        mf == gf
                            || strip_clone_suffix(&mf) == gf
                            || (syms.get(&mf).is_some() && syms.get(&mf) == syms.get(&gf)),
                        "{name} {debug} {va:#x}: function {mf} vs {gf}"
                    );
                }
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn source_lines_match_addr2line_frame_pointers() {
    let n = check_lines_against_addr2line("hot-fp.data");
    assert!(n > 40, "only {n} addresses compared");
}

#[test]
fn source_lines_match_addr2line_processes_and_threads() {
    assert!(check_lines_against_addr2line("procs.data") > 40);
    assert!(check_lines_against_addr2line("threads.data") > 10);
}

#[test]
fn inline_chains_match_addr2line() {
    // -O2 build: step -> mix -> kernel inlined into run.
    assert!(check_lines_against_addr2line("inline.data") >= 12);
    let (_t, cap) = ingest("inline.data");
    let depth = sql_scalar(&cap, "SELECT max(inline_depth) FROM symbol");
    assert_eq!(depth, "3", "step, mix, kernel inlined into run");
    // Inline levels are functions of their own in hotspots (perf report
    // --inline), and not with --no-inline (perf's `sym`).
    let with = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let fns: Vec<String> = csv_maps(&with)
        .into_iter()
        .map(|r| r["function"].clone())
        .collect();
    assert_eq!(fns[0], "step");
    assert!(fns.iter().any(|f| f == "mix") && fns.iter().any(|f| f == "kernel"));
    let without = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--no-inline",
        "--format",
        "csv",
    ]);
    let fns: Vec<String> = csv_maps(&without)
        .into_iter()
        .map(|r| r["function"].clone())
        .collect();
    assert_eq!(fns[0], "run");
    assert!(!fns.iter().any(|f| f == "step" || f == "mix"));
}

#[test]
fn libc_resolves_to_source_lines() {
    // libc6-dbg's separate debug file, found by build-id.
    let (_t, cap) = ingest("hot-fp.data");
    let v = sql_scalar(
        &cap,
        "SELECT count(*) FROM symbol s JOIN symbol_file f USING (segment, module_id) \
         WHERE f.path LIKE '%libc.so.6' AND s.line IS NOT NULL \
         AND f.debug_info LIKE '/usr/lib/debug/.build-id/%'",
    );
    assert!(v.parse::<u64>().unwrap() > 10, "{v}");
}

/// `perf report --no-children --sort srcline -n -g none`: samples per
/// source line (`file.c:12`; perf resolves lines through libbfd/addr2line
/// on the same files). Only source lines: perf's fallbacks for addresses
/// without line info (`sym+off`, `@plt+0`, kernel addresses) are left out.
pub(crate) fn perf_srclines(file: &std::path::Path) -> Vec<(String, u64)> {
    let report = perf(&[
        "report",
        "-i",
        file.to_str().unwrap(),
        "--no-children",
        "--sort",
        "srcline",
        "-n",
        "--stdio",
        "-g",
        "none",
        "--percent-limit",
        "0",
    ]);
    let mut rows = Vec::new();
    for l in report
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (samples, srcline): (u64, &str) = (f[1].parse().unwrap(), f[2]);
        if !srcline.contains(':') || srcline.starts_with("??") {
            continue;
        }
        rows.push((srcline.to_string(), samples));
    }
    rows
}

/// Expected: [`perf_srclines`] on the same file.
fn check_srcline_against_perf(name: &str) -> usize {
    let (_t, cap) = ingest(name);
    let out = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--by",
        "srcline",
        "--format",
        "csv",
    ]);
    let mut mine: HashMap<String, u64> = HashMap::new();
    for r in csv_maps(&out) {
        *mine.entry(r["srcline"].clone()).or_default() += r["self_samples"].parse::<u64>().unwrap();
    }
    let want = perf_srclines(&fixture(name));
    for (srcline, samples) in &want {
        assert_eq!(
            mine.get(srcline).copied(),
            Some(*samples),
            "{name}: samples at {srcline}"
        );
    }
    want.len()
}

#[test]
fn srcline_hotspots_match_perf_report() {
    assert!(check_srcline_against_perf("hot-fp.data") > 20);
    assert!(check_srcline_against_perf("threads.data") >= 3);
    assert!(check_srcline_against_perf("procs.data") > 20);
    assert!(check_srcline_against_perf("inline.data") > 5);
}
