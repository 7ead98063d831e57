//! The bundled perf.data fixtures: sample counts against `perf script`,
//! hotspots against `perf report --no-children` / `--children`.

use std::collections::HashMap;
use std::path::Path;

use crate::common::*;

/// One row of `perf report --sort dso,sym -n --stdio -g none`.
#[derive(Debug)]
pub(crate) struct PerfRow {
    pub(crate) children: Option<f64>,
    pub(crate) self_pct: f64,
    pub(crate) samples: u64,
    pub(crate) dso: String,
    pub(crate) kernel: bool,
    pub(crate) sym: String,
}

pub(crate) fn perf_report(file: &Path, children: bool) -> Vec<PerfRow> {
    let mode = if children {
        "--children"
    } else {
        "--no-children"
    };
    let out = perf(&[
        "report",
        "-i",
        file.to_str().unwrap(),
        mode,
        // perf's `sym` without inline frames, as `trawl ... --no-inline`.
        "--no-inline",
        "--sort",
        "dso,sym",
        "-n",
        "--stdio",
        "-g",
        "none",
        "--percent-limit",
        "0",
    ]);
    let mut rows = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let toks: Vec<&str> = t.split_whitespace().collect();
        let pct = |s: &str| s.trim_end_matches('%').parse::<f64>().unwrap();
        let (children, self_pct, rest) = if children {
            (Some(pct(toks[0])), pct(toks[1]), &toks[2..])
        } else {
            (None, pct(toks[0]), &toks[1..])
        };
        let samples: u64 = rest[0].parse().unwrap();
        // JIT maps are displayed as "[JIT] tid PID".
        let (dso, rest) = if rest[1] == "[JIT]" {
            (rest[1..4].join(" "), &rest[3..])
        } else {
            (rest[1].to_string(), &rest[1..])
        };
        let kernel = rest[1] == "[k]";
        let sym = rest[2..].join(" ");
        rows.push(PerfRow {
            children,
            self_pct,
            samples,
            dso,
            kernel,
            sym,
        });
    }
    assert!(
        !rows.is_empty(),
        "perf report printed nothing for {}",
        file.display()
    );
    rows
}

/// Inclusive % per (dso, symbol) from `perf script -F period,ip,sym,dso`.
/// Symbols perf names at offset 0 for a return address (a frame that is
/// not the first of its context), and the share (%) of the period of the
/// samples that have such a frame; from `perf script -F period,ip,sym,symoff`.
fn perf_return_boundaries(file: &Path) -> (std::collections::HashSet<String>, f64) {
    let out = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "period,ip,sym,symoff",
    ]);
    let mut syms = std::collections::HashSet::new();
    let (mut total, mut hit, mut period) = (0u64, 0u64, 0u64);
    let (mut prev_kernel, mut first, mut counted) = (false, true, false);
    for line in out.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            period = line.trim().parse().unwrap();
            total += period;
            first = true;
            counted = false;
            continue;
        }
        let t = line.trim();
        let (addr, sym) = t.split_once(' ').unwrap_or((t, ""));
        let kernel = u64::from_str_radix(addr, 16).unwrap_or(0) >= 0xffff_8000_0000_0000;
        let first_of_context = first || kernel != prev_kernel;
        first = false;
        prev_kernel = kernel;
        if !first_of_context {
            if let Some(name) = sym.strip_suffix("+0x0") {
                syms.insert(name.to_string());
                if !counted {
                    hit += period;
                    counted = true;
                }
            }
        }
    }
    (syms, 100.0 * hit as f64 / total.max(1) as f64)
}

fn perf_script_children(file: &Path) -> Vec<PerfRow> {
    use std::collections::HashSet;
    let out = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "period,ip,sym,dso",
    ]);
    let mut total = 0u64;
    let mut acc: HashMap<(String, String), u64> = HashMap::new();
    let mut period = 0u64;
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for line in out.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            period = line.trim().parse().unwrap();
            total += period;
            seen.clear();
            continue;
        }
        // "\t    addr sym (dso)"
        let t = line.trim();
        let (_addr, rest) = t.split_once(' ').unwrap();
        let (sym, dso) = rest.rsplit_once(" (").unwrap();
        let dso = dso.trim_end_matches(')');
        let dso = Path::new(dso)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| dso.to_string());
        let key = (dso, sym.to_string());
        if seen.insert(key.clone()) {
            *acc.entry(key).or_default() += period;
        }
    }
    acc.into_iter()
        .map(|((dso, sym), p)| PerfRow {
            children: Some((10000.0 * p as f64 / total as f64).round() / 100.0),
            self_pct: 0.0,
            samples: 0,
            kernel: dso == "[kernel.kallsyms]",
            dso,
            sym,
        })
        .collect()
}

pub(crate) struct TrawlRow {
    pub(crate) self_samples: u64,
    pub(crate) self_pct: f64,
    pub(crate) total_pct: f64,
}

pub(crate) fn trawl_hotspots(cap: &Path) -> HashMap<(String, String), TrawlRow> {
    let out = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        // perf report's `sym` is the ELF symbol: inlined code counts for
        // the function it was inlined into.
        "--no-inline",
        "--format",
        "csv",
    ]);
    let mut m = HashMap::new();
    for r in csv_maps(&out) {
        let mut module = Path::new(&r["module"])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| r["module"].clone());
        // perf displays the JIT map module /tmp/perf-PID.map as "[JIT] tid PID".
        if let Some(pid) = r["module"]
            .strip_prefix("/tmp/perf-")
            .and_then(|m| m.strip_suffix(".map"))
        {
            module = format!("[JIT] tid {pid}");
        }
        m.insert(
            (module, r["function"].clone()),
            TrawlRow {
                self_samples: r["self_samples"].parse().unwrap(),
                self_pct: r["self_pct"].parse().unwrap(),
                total_pct: r["total_pct"].parse().unwrap(),
            },
        );
    }
    m
}

/// A perf row that names a user-space function (not an address). The
/// comparisons below skip the others, so on a host where perf cannot
/// resolve the fixtures' binaries or libraries (other paths, other
/// libc) they compare fewer rows: `check_against_perf_report_min`'s
/// floor (`checked > min_rows`) keeps that from passing on next to
/// nothing.
pub(crate) fn is_user_symbol(r: &PerfRow) -> bool {
    !r.kernel && r.dso != "[unknown]" && !r.sym.starts_with("0x") && !r.sym.starts_with("0000")
}

/// Expected values: `perf report --no-children --sort dso,sym -n` (self %
/// and samples) and `perf report --children` (total %) on the same file.
fn check_against_perf_report(name: &str) {
    check_against_perf_report_min(name, 5)
}

fn check_against_perf_report_min(name: &str, min_rows: usize) {
    let file = fixture(name);
    let report_file = file.clone();
    let (_t, cap) = ingest(name);
    let mine = trawl_hotspots(&cap);
    let mut checked = 0;
    for r in perf_report(&report_file, false)
        .iter()
        .filter(|r| is_user_symbol(r))
    {
        let m = mine
            .get(&(r.dso.clone(), r.sym.clone()))
            .unwrap_or_else(|| {
                panic!(
                    "{name}: perf has {} {} ({}%), trawl does not",
                    r.dso, r.sym, r.self_pct
                )
            });
        assert_eq!(
            m.self_samples, r.samples,
            "{name}: self samples of {}",
            r.sym
        );
        assert!(
            (m.self_pct - r.self_pct).abs() <= 0.0051,
            "{name}: self % of {}: trawl {} perf {}",
            r.sym,
            m.self_pct,
            r.self_pct
        );
        checked += 1;
    }
    // perf report ignores --children on pipe-mode input (and perf inject's
    // file-mode copy of it is one perf cannot read back): there the
    // inclusive figures are summed here from perf script's symbolized
    // callchains instead, each symbol once per sample.
    let children = if name.contains("pipe") {
        perf_script_children(&file)
    } else {
        perf_report(&report_file, true)
    };
    // trawl names a return address by the call before it (address - 1);
    // perf 6.1 does so only for DWARF-unwound stacks. Where a call is the
    // last instruction of a function (a noreturn call such as _start's
    // call of _dl_start), perf's name for the return address is the next
    // symbol at offset 0: those samples may differ, and nothing else.
    let (boundary_syms, boundary_pct) = perf_return_boundaries(&file);
    for r in children.iter().filter(|r| is_user_symbol(r)) {
        let Some(m) = mine.get(&(r.dso.clone(), r.sym.clone())) else {
            assert!(
                boundary_syms.contains(&r.sym),
                "{name}: perf --children has {} {}, trawl does not",
                r.dso,
                r.sym
            );
            continue;
        };
        let c = r.children.unwrap();
        assert!(
            (m.total_pct - c).abs() <= 0.0051 + boundary_pct,
            "{name}: total % of {}: trawl {} perf {}",
            r.sym,
            m.total_pct,
            c
        );
        checked += 1;
    }
    // And the other way round: every function trawl names with self time
    // is one perf names too.
    let perf_self: HashMap<(String, String), u64> = perf_report(&report_file, false)
        .into_iter()
        .map(|r| ((r.dso, r.sym), r.samples))
        .collect();
    for ((dso, sym), m) in &mine {
        if m.self_samples > 0 && !sym.starts_with("0x") && dso != "[kernel.kallsyms]" {
            assert_eq!(
                perf_self.get(&(dso.clone(), sym.clone())),
                Some(&m.self_samples),
                "{name}: trawl has {dso} {sym} with {} self samples",
                m.self_samples
            );
        }
    }
    assert!(checked > min_rows, "{name}: only {checked} rows compared");
    // Sample count: perf script's.
    let n: usize = sql_scalar(&cap, "SELECT count(*) FROM perf_sample")
        .parse()
        .unwrap();
    assert_eq!(n, perf_script_samples(&file), "{name}: sample count");
}

#[test]
fn hotspots_match_perf_report_frame_pointers() {
    check_against_perf_report("hot-fp.data");
}

/// The README's first example, `trawl report hotspots hot --no-inline -n
/// 6` on hot-fp.data, every figure of it. Source: `perf script
/// --no-inline -F period,ip,sym` on the same file (each sample's period,
/// then its callchain, leaf first), summed here: self = the samples whose
/// leaf is the function, total = the samples with the function anywhere
/// in their chain (once per sample); the % are of the period of all
/// samples, to trawl's 4 decimals. (perf report prints 2 decimals and no
/// inclusive sample counts: `hotspots_match_perf_report_frame_pointers`.)
#[test]
fn readme_hotspots_equal_perf_script_callchains() {
    let file = fixture("hot-fp.data");
    let script = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "--no-inline",
        "-F",
        "period,ip,sym",
    ]);
    // (period, chain of symbols, leaf first) per sample.
    let mut samples: Vec<(u64, Vec<String>)> = Vec::new();
    for line in script.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(frame) = line.strip_prefix('\t') {
            let t = frame.trim();
            let sym = t.split_once(' ').map(|(_, s)| s).unwrap_or("");
            samples.last_mut().unwrap().1.push(sym.to_string());
        } else {
            samples.push((line.trim().parse().unwrap(), Vec::new()));
        }
    }
    assert_eq!(samples.len(), perf_script_samples(&file));
    // function → (self samples, self period, total samples, total period)
    let mut acc: HashMap<String, (u64, u64, u64, u64)> = HashMap::new();
    let mut all = 0u64;
    for (p, chain) in &samples {
        all += p;
        let leaf = acc.entry(chain[0].clone()).or_default();
        leaf.0 += 1;
        leaf.1 += p;
        let mut seen = std::collections::HashSet::new();
        for s in chain {
            if seen.insert(s) {
                let e = acc.entry(s.clone()).or_default();
                e.2 += 1;
                e.3 += p;
            }
        }
    }
    let pct = |p: u64| (100.0 * p as f64 / all as f64 * 1e4).round() as i64;
    let mut by_self: Vec<_> = acc.iter().collect();
    by_self.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    // No tie at the cut: the six are the same whatever breaks ties.
    assert!(by_self[5].1 .0 > by_self[6].1 .0, "{:?}", &by_self[..7]);
    let want: Vec<(String, u64, i64, u64, i64)> = by_self[..6]
        .iter()
        .map(|(f, a)| ((*f).clone(), a.0, pct(a.1), a.2, pct(a.3)))
        .collect();

    let (_t, cap) = ingest("hot-fp.data");
    let out = report_csv("hotspots", &cap, &["--no-inline", "-n", "6"]);
    let four =
        |m: &HashMap<String, String>, k: &str| (m[k].parse::<f64>().unwrap() * 1e4).round() as i64;
    let got: Vec<(String, u64, i64, u64, i64)> = csv_maps(&out)
        .iter()
        .map(|m| {
            (
                m["function"].clone(),
                m["self_samples"].parse().unwrap(),
                four(m, "self_pct"),
                m["total_samples"].parse().unwrap(),
                four(m, "total_pct"),
            )
        })
        .collect();
    assert_eq!(got, want, "trawl vs perf script (pct × 10^4)");
}

/// `--call-graph dwarf`: trawl unwinds the user stacks with framehop,
/// perf with libunwind/libdw; the inclusive figures must agree.
#[test]
fn hotspots_match_perf_report_dwarf_unwinding() {
    check_against_perf_report("hot-dwarf.data");
    let (_t, cap) = ingest("hot-dwarf.data");
    // Every sample unwound to _start (perf reports 100% for it).
    let v = sql_scalar(
        &cap,
        "SELECT count(DISTINCT s.sample_id) FROM perf_sample s \
         JOIN stack st USING (segment, stack_id) \
         JOIN frame_name f ON f.segment = st.segment AND f.frame_id = st.frame_id \
         WHERE f.function = '_start'",
    );
    assert_eq!(
        v.parse::<usize>().unwrap(),
        perf_script_samples(&fixture("hot-dwarf.data"))
    );
}

/// Samples in the vdso: perf names them from the copy it stored in its
/// build-id cache at record time (here: `bin/kernel-vdso.so`, added to the
/// test HOME's cache), trawl from the same file found by build-id in the
/// debug directory.
#[test]
fn hotspots_match_perf_report_vdso() {
    check_against_perf_report_min("vdso.data", 3);
    let (_t, cap) = ingest("vdso.data");
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT status || ' ' || binary FROM symbol_file WHERE path = '[vdso]'"
        ),
        format!("ok {}", fixture_bin().join("kernel-vdso.so").display())
    );
}

/// Removes a file when dropped (also when the test panics).
struct RemoveOnDrop(std::path::PathBuf);
impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// JIT code: anonymous executable memory named by the process's
/// /tmp/perf-PID.map. perf report reads the map from /tmp only, so the
/// fixture's copy is put there for it; trawl finds it in the debug
/// directory. Without the map the frames stay unnamed, and `symbol_file`
/// says why.
#[test]
fn hotspots_match_perf_report_jit_map() {
    let map = fixture("jit/perf-24724.map");
    let tmp = RemoveOnDrop("/tmp/perf-24724.map".into());
    std::fs::copy(&map, &tmp.0).unwrap();
    check_against_perf_report_min("jit.data", 2);
    drop(tmp);

    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(
        &fixture("jit.data"),
        &cap,
        &["--debug-dir", fixture_bin().to_str().unwrap()],
    );
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT status FROM symbol_file WHERE path = '/tmp/perf-24724.map'"
        ),
        "not_found"
    );
    let named = sql_scalar(
        &cap,
        "SELECT count(*) FROM symbol s JOIN module m USING (segment, module_id) \
         WHERE m.path = '/tmp/perf-24724.map' AND s.function IS NOT NULL",
    );
    assert_eq!(named, "0");
}

#[test]
fn hotspots_match_perf_report_threads() {
    check_against_perf_report("threads.data");
}

#[test]
fn hotspots_match_perf_report_processes() {
    check_against_perf_report("procs.data");
}

#[test]
fn hotspots_match_perf_report_pipe_mode() {
    check_against_perf_report("hot-pipe.data");
}

#[test]
fn hotspots_match_perf_report_zstd() {
    check_against_perf_report("hot-z.data");
}

#[test]
fn dwarf_recording_keeps_registers_and_stack() {
    // Expected: perf script's sample count; every sample of a
    // --call-graph dwarf,4096 recording carries regs and up to 4096 bytes.
    let (_t, cap) = ingest("hot-dwarf.data");
    let n: usize = sql_scalar(&cap, "SELECT count(*) FROM perf_user_stack")
        .parse()
        .unwrap();
    assert_eq!(n, perf_script_samples(&fixture("hot-dwarf.data")));
    let out = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT stack_size, length(encode(stack, 'hex')) / 2, cardinality(regs), regs_mask FROM perf_user_stack",
        "--format",
        "csv",
    ]);
    for r in csv_rows(&out) {
        assert_eq!(r[0], "4096");
        let used: u64 = r[1].parse().unwrap();
        assert!(used > 0 && used <= 4096, "{r:?}");
        let mask: u64 = r[3].parse().unwrap();
        assert_eq!(r[2].parse::<u32>().unwrap(), mask.count_ones(), "{r:?}");
    }
}

#[test]
fn group_read_values_match_perf_script() {
    // perf script prints, for each group member, the difference of its
    // counter since the previous sample of the same thread as `period`.
    let file = fixture("group.data");
    let (_t, cap) = ingest("group.data");
    let out = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "tid,event,period",
    ]);
    let mut perf_deltas: HashMap<(String, String), Vec<u64>> = HashMap::new();
    for l in out.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() < 3 {
            continue;
        }
        perf_deltas
            .entry((t[0].to_string(), t[2].trim_end_matches(':').to_string()))
            .or_default()
            .push(t[1].parse().unwrap());
    }
    let mine = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT s.tid, r.event, r.value - COALESCE(lag(r.value) OVER (PARTITION BY s.tid, r.event ORDER BY s.sample_id), 0) AS delta \
         FROM perf_sample_read r JOIN perf_sample s USING (capture, sample_id) ORDER BY s.tid, r.event, s.sample_id",
        "--format",
        "csv",
    ]);
    let mut my_deltas: HashMap<(String, String), Vec<u64>> = HashMap::new();
    for r in csv_rows(&mine) {
        my_deltas
            .entry((r[0].clone(), r[1].clone()))
            .or_default()
            .push(r[2].parse().unwrap());
    }
    assert_eq!(my_deltas.len(), 2, "two counters: {:?}", my_deltas.keys());
    assert_eq!(my_deltas, perf_deltas);
}

#[test]
fn killed_recording_is_read_to_the_end() {
    // perf cannot read a file whose header was never finished (data size
    // 0). Expected count: perf script on a copy whose header data size is
    // patched to the real length.
    let (_t, cap) = ingest("killed.data");
    let n: usize = sql_scalar(&cap, "SELECT count(*) FROM perf_sample")
        .parse()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fixed = dir.path().join("fixed.data");
    let mut b = std::fs::read(fixture("killed.data")).unwrap();
    let off = u64::from_le_bytes(b[40..48].try_into().unwrap());
    let len = b.len() as u64 - off;
    b[48..56].copy_from_slice(&len.to_le_bytes());
    b[72..104].fill(0);
    std::fs::write(&fixed, &b).unwrap();
    assert_eq!(n, perf_script_samples(&fixed));
    assert!(n > 1000);
    let kind = sql_scalar(&cap, "SELECT kind FROM diagnostic");
    assert_eq!(kind, "data_size_zero");
}

#[test]
fn samples_carry_fields_as_perf_script_prints_them() {
    // Expected: perf script -G -F comm,pid,tid,time,period,event,ip, every
    // sample of the multi-process fixture (fork + exec: comm and address
    // spaces change mid-recording).
    let file = fixture("procs.data");
    let (_t, cap) = ingest("procs.data");
    let out = perf(&[
        "script",
        "-G",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "comm,pid,tid,time,period,event,ip",
    ]);
    let perf_rows: Vec<String> = out
        .lines()
        .filter(|l| l.contains(':'))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let mine = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT comm, pid, tid, time_ns, period, event, ip FROM perf_sample ORDER BY sample_id",
        "--format",
        "csv",
    ]);
    let my_rows: Vec<String> = csv_rows(&mine)
        .into_iter()
        .map(|r| {
            let t: i64 = r[3].parse().unwrap();
            let ip: u64 = r[6].parse().unwrap();
            format!(
                "{} {}/{} {}.{:06}: {} {}: {:x}",
                r[0],
                r[1],
                r[2],
                t / 1_000_000_000,
                (t % 1_000_000_000) / 1000,
                r[4],
                r[5],
                ip
            )
        })
        .collect();
    assert_eq!(my_rows.len(), perf_rows.len());
    for (i, (m, p)) in my_rows.iter().zip(&perf_rows).enumerate() {
        assert_eq!(m, p, "sample {i}");
    }
}

#[test]
fn clock_data_and_header_match_perf_header() {
    // Expected: perf report --header-only on a `perf record -k mono` file.
    let file = fixture("clock.data");
    let (_t, cap) = ingest("clock.data");
    let hdr = perf(&["report", "-i", file.to_str().unwrap(), "--header-only"]);
    let line = |k: &str| {
        hdr.lines()
            .find(|l| l.starts_with(&format!("# {k}")))
            .unwrap_or_else(|| panic!("perf header has no {k}"))
            .to_string()
    };
    // "# reference time: 2026-11-22 02:19:13.107247 = 1795313953.107247 (TOD) = 2381.772323404 (monotonic)"
    let r = line("reference time");
    let parts: Vec<&str> = r.split(" = ").collect();
    let tod: f64 = parts[1].trim_end_matches(" (TOD)").parse().unwrap();
    let mono = parts[2].trim_end_matches(" (monotonic)");
    let (s, frac) = mono.split_once('.').unwrap();
    let mono_ns: i64 = s.parse::<i64>().unwrap() * 1_000_000_000 + frac.parse::<i64>().unwrap();
    let meta = |k: &str| {
        sql_scalar(
            &cap,
            &format!("SELECT value FROM capture_meta WHERE key = '{k}'"),
        )
    };
    assert_eq!(meta("clockid"), "1");
    assert_eq!(meta("clock_clockid_ns").parse::<i64>().unwrap(), mono_ns);
    let wall: f64 = meta("clock_wall_ns").parse::<f64>().unwrap() / 1e9;
    assert!((wall - tod).abs() < 1e-6, "{wall} vs {tod}");
    assert_eq!(sql_scalar(&cap, "SELECT clockid FROM perf_event"), "1");
    assert!(line("clockid:").contains("monotonic (1)"));
    // "# time of first sample : 2381.908959"
    let first: f64 = line("time of first sample")
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mine: f64 = meta("sample_time_first_ns").parse::<f64>().unwrap() / 1e9;
    assert!((first - mine).abs() < 1e-6);
    assert!(line("cmdline").contains(&meta("cmdline")));
    assert!(line("hostname").ends_with(&meta("hostname")));
    assert!(line("perf version").ends_with(&meta("perf_version")));
}

/// `perf record -o - | trawl ingest - -o cap`: the stream is read once;
/// a file-mode perf.data on standard input (`cat`, `zstdcat`, `ssh`) and
/// a gzip-compressed one (piped, or named) are read too, though perf reads
/// `-i -` in pipe mode only. Expected: perf script's count on the file,
/// and the same hotspots as from the file.
#[test]
fn perf_data_from_standard_input() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let gz = |data: &[u8]| {
        let mut c = Command::new("gzip")
            .arg("-c")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut i = c.stdin.take().unwrap();
        let d = data.to_vec();
        let w = std::thread::spawn(move || i.write_all(&d).unwrap());
        let o = c.wait_with_output().unwrap();
        w.join().unwrap();
        o.stdout
    };
    for (name, compress) in [
        ("hot-pipe.data", false),
        ("hot-fp.data", false),
        ("hot-fp.data", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let cap = dir.path().join("stdin");
        let mut child = Command::new(crate::common::trawl_exe())
            .args([
                "ingest",
                "-",
                "-o",
                cap.to_str().unwrap(),
                "--debug-dir",
                fixture_bin().to_str().unwrap(),
            ])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut data = std::fs::read(fixture(name)).unwrap();
        if compress {
            data = gz(&data);
        }
        let mut stdin = child.stdin.take().unwrap();
        // Write in small pieces, as a pipe delivers them.
        for chunk in data.chunks(1000) {
            stdin.write_all(chunk).unwrap();
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let n: usize = sql_scalar(&cap, "SELECT count(*) FROM perf_sample")
            .parse()
            .unwrap();
        assert_eq!(n, perf_script_samples(&fixture(name)), "{name}");
        let (_t, from_file) = ingest(name);
        let hot =
            |c: &Path| trawl_ok(&["report", "hotspots", c.to_str().unwrap(), "--format", "csv"]);
        assert_eq!(hot(&cap), hot(&from_file), "{name}");
        if compress {
            // Named: the same.
            let f = dir.path().join("hot-fp.data.gz");
            std::fs::write(&f, &data).unwrap();
            let named = dir.path().join("named");
            trawl_ok(&[
                "ingest",
                f.to_str().unwrap(),
                "-o",
                named.to_str().unwrap(),
                "--debug-dir",
                fixture_bin().to_str().unwrap(),
            ]);
            assert_eq!(hot(&named), hot(&from_file));
            assert_eq!(
                sql_scalar(
                    &named,
                    "SELECT value FROM capture_meta WHERE key = 'compression'"
                ),
                "gzip"
            );
        }
    }
}

/// A pipe-mode capture whose only event names are in the tracing data
/// (probe-pipe.data: a uprobe, the names perf 4.16+ adds removed): the
/// event is named as perf script names it, `probe_threads:burn`, not by
/// its tracepoint id; the sample count is perf script's.
#[test]
fn pipe_mode_tracepoint_named_from_tracing_data() {
    use std::process::{Command, Stdio};
    let file = fixture("probe-pipe.data");
    let o = Command::new("perf")
        .env("HOME", perf_home())
        .args(["script", "-i", "-", "-F", "event"])
        .stdin(std::fs::File::open(&file).unwrap())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let names: std::collections::BTreeSet<&str> = out
        .lines()
        .map(|l| l.trim().trim_end_matches(':'))
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let (_t, cap) = ingest("probe-pipe.data");
    assert_eq!(
        sql_rows(&cap, "SELECT name FROM perf_event"),
        vec![vec![names.first().unwrap().to_string()]]
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT count(*) FROM perf_sample"),
        out.lines().count().to_string()
    );
}

/// User frames of each sample, leaf first, as (file offset of the pc,
/// function): trawl's physical frames with a return address minus 1, as
/// perf script prints unwound callers.
fn trawl_user_stacks(cap: &Path) -> Vec<Vec<(u64, String)>> {
    let mut out: Vec<Vec<(u64, String)>> = Vec::new();
    let mut last = String::new();
    for r in sql_rows(
        cap,
        "SELECT s.sample_id, fr.is_return, e.rel_pc, e.function FROM perf_sample s \
         JOIN stack_entry e USING (segment, stack_id) \
         JOIN frame fr ON fr.segment = e.segment AND fr.frame_id = e.frame_id \
         WHERE e.inline_depth = 0 AND fr.context = 'user' \
         ORDER BY s.time_ns, s.sample_id, e.pos",
    ) {
        if r[0] != last {
            out.push(Vec::new());
            last = r[0].clone();
        }
        let pc: u64 = r[2].parse().unwrap();
        out.last_mut()
            .unwrap()
            .push((if r[1] == "true" { pc - 1 } else { pc }, r[3].clone()));
    }
    out
}

/// DWARF unwinding of an LLD-linked PIE (bin/lld: its executable segment
/// starts at file offset 0x680, in the page the read-only segment starts
/// in, and is mapped from offset 0): every sample's frames are perf
/// script's (file offsets, callers at return address - 1), `_start`
/// outermost.
#[test]
fn dwarf_unwinding_through_an_lld_pie() {
    let file = fixture("lld-dwarf.data");
    // With symbols: perf prints a frame whose function was inlined there
    // under the inlined name; consecutive lines of one address are one
    // frame.
    let out = perf(&["script", "-i", file.to_str().unwrap(), "-F", "ip,sym"]);
    let want: Vec<Vec<u64>> = out
        .split("\n\n")
        .map(|b| {
            let mut v: Vec<u64> = b
                .lines()
                .filter_map(|l| u64::from_str_radix(l.split_whitespace().next()?, 16).ok())
                .filter(|&ip| ip < 0xffff_0000_0000_0000) // user frames
                .collect();
            v.dedup();
            v
        })
        .filter(|v| !v.is_empty())
        .collect();
    let (_t, cap) = ingest("lld-dwarf.data");
    let got = trawl_user_stacks(&cap);
    assert!(want.len() > 50, "{}", want.len());
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let pcs: Vec<u64> = g.iter().map(|f| f.0).collect();
        assert_eq!(&pcs, w, "sample {i}: {g:?}");
        assert_eq!(g.last().unwrap().1, "_start", "sample {i}");
    }
}

/// The same program linked statically with LLD (bin/lld_static: read-only
/// segment at 0x200000, executable one at file offset 0x27dc0, mapped
/// from 0x27000): this perf (6.1) unwinds none of its stacks, so the
/// expected frames are worked from the program and `objdump -d`: every
/// stack ends in `_start` through `main`; `leaf`'s caller is `mid` at one
/// of its two `call <leaf>` return addresses, `mid`'s is `main` after its
/// `call <mid>`.
#[test]
fn dwarf_unwinding_through_an_lld_static_binary() {
    let bin = fixture_bin().join("lld_static");
    let o = std::process::Command::new("objdump")
        .args(["-d", "--no-show-raw-insn"])
        .arg(&bin)
        .output()
        .expect("objdump (binutils)");
    let dis = String::from_utf8_lossy(&o.stdout).into_owned();
    // The address after each `call ... <callee>` inside function `f`, as
    // a file offset (the executable segment: vaddr - 0x201000).
    let returns = |f: &str, callee: &str| -> Vec<u64> {
        let body = dis.split(&format!("<{f}>:\n")).nth(1).unwrap();
        let lines: Vec<&str> = body.lines().take_while(|l| !l.is_empty()).collect();
        let mut out = Vec::new();
        for (k, l) in lines.iter().enumerate() {
            if l.contains("call") && l.contains(&format!("<{callee}>")) {
                let next = lines[k + 1].trim().split(':').next().unwrap();
                out.push(u64::from_str_radix(next, 16).unwrap() - 0x201000);
            }
        }
        out
    };
    let leaf_returns = returns("mid", "leaf");
    let mid_returns = returns("main", "mid");
    assert_eq!((leaf_returns.len(), mid_returns.len()), (2, 1));
    let (_t, cap) = ingest("lld-static-dwarf.data");
    let got = trawl_user_stacks(&cap);
    assert_eq!(
        got.len(),
        perf_script_samples(&fixture("lld-static-dwarf.data"))
    );
    let mut leaves = 0;
    for (i, g) in got.iter().enumerate() {
        let names: Vec<&str> = g.iter().map(|f| f.1.as_str()).collect();
        assert_eq!(names.last(), Some(&"_start"), "sample {i}: {names:?}");
        assert!(names.contains(&"main"), "sample {i}: {names:?}");
        if names[0] == "leaf" {
            assert_eq!(names[1..3], ["mid", "main"], "sample {i}");
            assert!(leaf_returns.contains(&(g[1].0 + 1)), "sample {i}: {g:?}");
            assert_eq!(g[2].0 + 1, mid_returns[0], "sample {i}");
            leaves += 1;
        }
    }
    assert!(leaves * 10 >= got.len() * 9, "{leaves} of {}", got.len());
}

#[test]
fn tracepoint_payloads_match_perf_script() {
    // Expected: perf script -F event,trace, which formats the same
    // PERF_SAMPLE_RAW bytes with the kernel's event format
    // (sys_enter_write: fd at offset 16, count at 32; sys_exit_write: ret
    // at 16; see /sys/kernel/tracing/events/syscalls/*/format).
    let file = fixture("tracepoint.data");
    let (_t, cap) = ingest("tracepoint.data");
    let out = perf(&["script", "-i", file.to_str().unwrap(), "-F", "event,trace"]);
    let want: Vec<String> = out
        .lines()
        .filter(|l| l.contains("syscalls:"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let mine = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT event, encode(raw, 'hex') FROM perf_sample ORDER BY sample_id",
        "--format",
        "csv",
    ]);
    let field = |hex: &str, off: usize| -> u64 {
        let b: Vec<u8> = (0..8)
            .map(|i| u8::from_str_radix(&hex[2 * (off + i)..2 * (off + i) + 2], 16).unwrap())
            .collect();
        u64::from_le_bytes(b.try_into().unwrap())
    };
    let got: Vec<String> = csv_rows(&mine)
        .into_iter()
        .map(|r| match r[0].as_str() {
            "syscalls:sys_enter_write" => format!(
                "syscalls:sys_enter_write: fd: 0x{:08x}, buf: 0x{:08x}, count: 0x{:08x}",
                field(&r[1], 16),
                field(&r[1], 24),
                field(&r[1], 32)
            ),
            e => format!("{e}: 0x{:x}", field(&r[1], 16)),
        })
        .collect();
    assert!(!got.is_empty());
    assert_eq!(got, want);
}

#[test]
fn cpu_topology_matches_perf_report_header() {
    // perf report --header-only -I prints HEADER_CPU_TOPOLOGY as
    // "# CPU N: Core ID c, Die ID d, Socket ID s"; trawl's perf_cpu rows
    // must be the same, for a recording made here and its pipe-mode twin
    // (features as HEADER_FEATURE records).
    for name in ["hot-fp.data", "hot-pipe.data"] {
        let (_t, cap) = ingest(name);
        let header = perf(&[
            "report",
            "-i",
            fixture(name).to_str().unwrap(),
            "--header-only",
            "-I",
        ]);
        let expected: Vec<String> = header
            .lines()
            .filter_map(|l| l.strip_prefix("# CPU "))
            .filter(|l| l.contains("Socket ID"))
            .map(|rest| {
                rest.split(|c: char| !c.is_ascii_digit())
                    .filter(|x| !x.is_empty())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        let got: Vec<String> = sql_rows(
            &cap,
            "SELECT cpu, core_id, die_id, socket_id FROM perf_cpu ORDER BY cpu",
        )
        .into_iter()
        .map(|r| r.join(","))
        .collect();
        assert!(!expected.is_empty(), "{name}: {header}");
        assert_eq!(got, expected, "{name}");
    }
}

/// `perf script -F tod --ns` with TZ=UTC: perf's wall time of each sample,
/// from the clock data header, one line per sample in time order.
pub(crate) fn perf_tod(file: &Path) -> Vec<String> {
    let o = std::process::Command::new("perf")
        .env("TZ", "UTC")
        .env("HOME", perf_home())
        .args(["script", "-i", file.to_str().unwrap(), "-F", "tod", "--ns"])
        .output()
        .expect("perf");
    // Without clock data perf prints only its refusal, on stderr.
    let out = match String::from_utf8_lossy(&o.stdout).into_owned() {
        s if s.trim().is_empty() => String::from_utf8_lossy(&o.stderr).into_owned(),
        s => s,
    };
    // (In pipe mode perf prints the call chains too: only dates count.)
    let date = |l: &str| l.len() > 10 && l.as_bytes()[4] == b'-' && l.as_bytes()[7] == b'-';
    let lines: Vec<&str> = out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.iter().any(|l| date(l)) {
        true => lines
            .into_iter()
            .filter(|l| date(l))
            .map(String::from)
            .collect(),
        false => lines.into_iter().map(String::from).collect(),
    }
}

/// `time_utc` of every sample, as perf prints a time of day.
fn sample_times_utc(cap: &Path) -> Vec<String> {
    sql_rows(cap, "SELECT time_utc FROM perf_sample ORDER BY sample_id")
        .into_iter()
        .map(|r| utc_text(&r[0]))
        .collect()
}

#[test]
fn utc_times_equal_perf_script_tod() {
    // Expected: perf script -F tod (the sample's time placed on UTC with
    // the clock data header), in file mode and in pipe mode (where the
    // clock data is a HEADER_FEATURE record in the stream).
    for name in ["clock.data", "clock-pipe.data"] {
        let (_t, cap) = ingest(name);
        let perf: Vec<String> = perf_tod(&fixture(name))
            .iter()
            .map(|t| utc_text(t))
            .collect();
        let mine = sample_times_utc(&cap);
        assert!(perf.len() > 50, "{name}: {perf:?}");
        assert_eq!(mine, perf, "{name}");
        assert_eq!(
            sql_scalar(
                &cap,
                "SELECT count(*) FROM diagnostic WHERE kind = 'late_clock_data'"
            ),
            "0"
        );
    }
    // Without -k there is no clock data: perf refuses, trawl leaves the
    // column null (time_ns stays).
    let perf = perf_tod(&fixture("hot-fp.data"));
    assert!(perf[0].contains("missing clock data"), "{perf:?}");
    let (_t, cap) = ingest("hot-fp.data");
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(time_utc) = 0 AND count(time_ns) > 0 FROM perf_sample"
        ),
        "true"
    );
}

#[test]
fn flat_sample_table_names_leaves_as_perf_script() {
    // Expected: perf script -G -F ip,sym,dso,srcline: each sample's leaf
    // symbol, module and source line, in time order (the flat table a
    // notebook reads without trawl).
    for name in ["hot-fp.data", "inline.data"] {
        let (_t, cap) = ingest(name);
        let out = perf(&[
            "script",
            "-i",
            fixture(name).to_str().unwrap(),
            "-G",
            "-F",
            "ip,sym,dso,srcline",
        ]);
        let lines: Vec<&str> = out.lines().filter(|l| !l.trim().is_empty()).collect();
        let mine = sql_rows(
            &cap,
            "SELECT function, module, srcline FROM perf_sample_symbolized ORDER BY sample_id",
        );
        assert_eq!(
            mine.len() * 2,
            lines.len(),
            "{name}: one sample line and its srcline each"
        );
        let mut named = 0;
        for (i, (m, pair)) in mine.iter().zip(lines.chunks(2)).enumerate() {
            // "    55a4e8e271a3 spin_a (/path/bin/hot)" then "  hot.c:11"
            let head = pair[0].trim();
            let (_ip, rest) = head.split_once(' ').unwrap();
            let (sym, dso) = rest.rsplit_once(" (").unwrap();
            let dso = dso.trim_end_matches(')');
            if sym == "[unknown]" {
                assert!(m[0].starts_with("0x"), "{name} sample {i}: {m:?} vs {head}");
                continue;
            }
            named += 1;
            assert_eq!(
                (m[0].as_str(), m[1].as_str()),
                (sym, dso),
                "{name} sample {i}"
            );
            // perf script's srcline without a line table is `dso[offset]`
            // (perf report's is `sym+offset`, trawl's too): lines only.
            let line = pair[1].trim();
            if !line.contains('[') {
                assert_eq!(m[2], line, "{name} sample {i}: srcline");
            }
        }
        assert!(
            named > mine.len() / 2,
            "{name}: {named} of {} named",
            mine.len()
        );
    }
}

#[test]
fn flat_sample_table_follows_trawl_symbolize() {
    // Without symbols there is no flat table file; `trawl symbolize
    // --flat` writes it (the same leaves as an ingest that symbolized:
    // spin_a's sample count from perf report --no-children --sort sym).
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&fixture("hot-fp.data"), &cap, &["--no-symbolize"]);
    assert!(!cap.join("perf_sample_symbolized.parquet").exists());
    let bin = fixture_bin();
    trawl_ok(&[
        "symbolize",
        cap.to_str().unwrap(),
        "--flat",
        "--debug-dir",
        bin.to_str().unwrap(),
    ]);
    assert!(cap.join("perf_sample_symbolized.parquet").is_file());
    let report = perf(&[
        "report",
        "-i",
        fixture("hot-fp.data").to_str().unwrap(),
        "--no-children",
        "--sort",
        "sym",
        "--stdio",
        "-F",
        "sample,sym",
    ]);
    let spin_a: i64 = report
        .lines()
        .find(|l| l.trim_end().ends_with("[.] spin_a"))
        .and_then(|l| l.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM perf_sample_symbolized WHERE function = 'spin_a'"
        ),
        spin_a.to_string()
    );
    // Leftovers of the rewrite: none.
    let stray: Vec<_> = std::fs::read_dir(&cap)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

#[test]
fn flat_file_is_the_view_for_readers_without_trawl() {
    // `ingest --flat` writes perf_sample_symbolized.parquet (named in Rust
    // as the rows are made); trawl's sessions read the view
    // (sample_symbolized.sql over frame_name). DuckDB reads the file: the
    // same rows, in the same order. Without --flat no file is written,
    // and the view is still there.
    for name in [
        "hot-fp.data",
        "inline.data",
        "procs.data",
        "jit.data",
        "vdso.data",
    ] {
        let (_t, cap) = ingest(name);
        assert!(
            !cap.join("perf_sample_symbolized.parquet").exists(),
            "{name}"
        );
        let flat = cap.with_file_name("flat");
        ingest_file(
            &fixture(name),
            &flat,
            &[
                "--flat",
                "--debug-dir",
                fixture_bin().to_str().unwrap(),
                "--debug-dir",
                fixture("jit").to_str().unwrap(),
            ],
        );
        let cols =
            "sample_id, pid, tid, event, period, stack_id, function, module, srcline, file, line";
        let view = sql_rows(
            &cap,
            &format!("SELECT {cols} FROM perf_sample_symbolized ORDER BY sample_id"),
        );
        let out = std::process::Command::new("python3")
            .args([
                "-c",
                "import duckdb, json, sys; print(json.dumps(duckdb.sql(f\"SELECT {sys.argv[2]} FROM '{sys.argv[1]}' ORDER BY sample_id\").fetchall()))",
                flat.join("perf_sample_symbolized.parquet").to_str().unwrap(),
                cols,
            ])
            .output()
            .expect("python3 with duckdb (tests/run.sh installs it)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let file: Vec<Vec<serde_json::Value>> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(file.len(), view.len(), "{name}");
        for (f, v) in file.iter().zip(&view) {
            let f: Vec<String> = f
                .iter()
                .map(|x| match x {
                    serde_json::Value::Null => String::new(),
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            assert_eq!(&f, v, "{name}");
        }
    }
}

#[test]
fn default_hotspots_split_inlined_code_as_addr2line_does() {
    // Default `report hotspots` counts inlined code for the inlined
    // function (as `perf report --inline` means to; this perf build prints
    // no inline frames, so the expected values come from binutils):
    // expected = each sample's leaf, from `perf script -F sym,symoff,dso`
    // (address = the symbol's address from `nm` + offset), put through
    // `addr2line -a -f -i`: its innermost function takes the sample's self
    // count, every function of its inline chain the sample's total.
    let name = "inline.data";
    let bin = fixture_bin().join("inl");
    let out = perf(&[
        "script",
        "-i",
        fixture(name).to_str().unwrap(),
        "-G",
        "-F",
        "ip,sym,symoff,dso",
    ]);
    let syms = std::process::Command::new("nm")
        .arg(&bin)
        .output()
        .expect("nm (binutils)");
    let base: HashMap<String, u64> = String::from_utf8_lossy(&syms.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (a, _kind, s) = (f.next()?, f.next()?, f.next()?);
            Some((s.to_string(), u64::from_str_radix(a, 16).ok()?))
        })
        .collect();
    let (mut all, mut addrs) = (0u64, Vec::new());
    for l in out.lines().filter(|l| !l.trim().is_empty()) {
        all += 1;
        // "    55ddd28721d5 run+0x45 (/path/bin/inl)"
        let mut f = l.split_whitespace();
        let (_ip, symoff, dso) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        if !dso.ends_with("/bin/inl)") {
            continue;
        }
        let (sym, off) = symoff.rsplit_once("+0x").unwrap();
        addrs.push(base[sym] + u64::from_str_radix(off, 16).unwrap());
    }
    assert!(addrs.len() > 600, "{} samples in bin/inl", addrs.len());
    let mut a2l = std::process::Command::new("addr2line");
    a2l.args(["-a", "-f", "-i", "-e"]).arg(&bin);
    for a in &addrs {
        a2l.arg(format!("{a:#x}"));
    }
    let chains =
        String::from_utf8_lossy(&a2l.output().expect("addr2line (binutils)").stdout).into_owned();
    let (mut selfs, mut totals): (HashMap<String, u64>, HashMap<String, u64>) = Default::default();
    let mut chain: Vec<String> = Vec::new();
    let mut flush = |chain: &mut Vec<String>| {
        if let Some(leaf) = chain.first() {
            *selfs.entry(leaf.clone()).or_default() += 1;
            let mut seen = std::collections::HashSet::new();
            for f in chain.iter().filter(|f| seen.insert(f.to_string())) {
                *totals.entry(f.clone()).or_default() += 1;
            }
        }
        chain.clear();
    };
    let lines: Vec<&str> = chains.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("0x") {
            flush(&mut chain);
            i += 1;
        } else {
            chain.push(lines[i].to_string());
            i += 2; // function, then file:line
        }
    }
    flush(&mut chain);
    assert!(
        selfs.len() >= 3 && selfs.keys().any(|f| f != "run"),
        "inlined functions take samples: {selfs:?}"
    );
    let (_t, cap) = ingest(name);
    let rows = csv_maps(&trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--format",
        "csv",
    ]));
    for (f, n) in &selfs {
        let r = rows
            .iter()
            .find(|r| r["module"].ends_with("/bin/inl") && &r["function"] == f)
            .unwrap_or_else(|| panic!("no hotspot row for {f} (addr2line's innermost)"));
        assert_eq!(
            r["self_samples"].parse::<u64>().unwrap(),
            *n,
            "{f}: self samples"
        );
        let pct: f64 = r["total_pct"].parse().unwrap();
        let want = 100.0 * totals[f] as f64 / all as f64;
        assert!(
            (pct - want).abs() < 0.01,
            "{f}: total {pct}% vs {want:.3}% from addr2line"
        );
    }
}
