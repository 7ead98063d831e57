//! The Firefox Profiler's processed profile format, written by
//! `fxprof-processed-profile` (the crate samply writes its profiles with).
//!
//! - one process per (capture, pid) named by its main thread's command,
//!   one thread per tid, named by its command;
//! - every sample at its time (relative to the capture's first selected
//!   sample), with weight 1: the Profiler's call tree counts samples;
//!   for a clock event (`cpu-clock`, `task-clock`) weighed by period the
//!   period is the sample's CPU delta (the Profiler's CPU graph);
//! - frames are the function names, root first, each inline level a frame
//!   of its own (the innermost last), in category `User` or `Kernel`;
//! - source lines: each function's file in `funcTable.fileName`, each
//!   frame's line in `frameTable.line` (the Profiler's source view counts
//!   samples per line from it). The crate writes neither column (its
//!   frames are names or addresses for a symbol server), so each distinct
//!   (function, file, line) is written as a label of its own, a token,
//!   and [`add_source_lines`] turns the tokens back into functions, files
//!   and lines in the serialized profile.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use anyhow::bail;
use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, Profile,
    ReferenceTimestamp, SamplingInterval, StackHandle, ThreadHandle, Timestamp,
};
use serde::Serialize;
use serde_json::value::{to_raw_value, RawValue};
use serde_json::Value;
use trawl_query::profile::StackProfile;

/// What a label token stands for: (function, file, line) as indices into
/// the profile's strings (line 0: unknown).
type Position = (u32, Option<u32>, u32);

/// Every frame label written is a token, this character and an index into
/// the positions: the tables hold no other label, so a token never meets
/// a real function name.
const TOKEN: char = '\u{1}';

/// The profile in the Firefox Profiler's processed format (JSON).
/// `interval_ns` is the sampling interval the Profiler assumes between
/// samples (its CPU graph and durations). The profile is taken whole: its
/// samples are let go once the Profiler's tables hold them, before the
/// JSON is written.
pub fn write(mut p: StackProfile, product: &str, interval_ns: u64) -> anyhow::Result<Vec<u8>> {
    let cpu_from_period = match p.weight.as_deref() {
        None => false,
        Some("period") => crate::units::is_time_event(&p.event),
        Some(w) => bail!(
            "the Firefox Profiler counts samples: --weight {w} cannot be written \
             (use --weight samples or period, or export --to pprof/speedscope)"
        ),
    };
    let mut prof = Profile::new(
        product,
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_nanos(interval_ns.max(1)),
    );
    let user = prof.add_category("User", CategoryColor::Yellow);
    let kernel = prof.add_category("Kernel", CategoryColor::Orange);
    let (user, kernel): (CategoryPairHandle, CategoryPairHandle) = (user.into(), kernel.into());
    // Each capture's clock starts at its first selected sample.
    let mut start: HashMap<u32, i64> = HashMap::default();
    for s in &p.samples {
        if let Some(t) = s.time_ns {
            let e = start.entry(s.capture).or_insert(t);
            *e = (*e).min(t);
        }
    }
    let at = |cap: u32, t: Option<i64>| -> Timestamp {
        let t0 = start.get(&cap).copied().unwrap_or(0);
        Timestamp::from_nanos_since_reference(t.map_or(0, |t| t.saturating_sub(t0).max(0) as u64))
    };
    // Processes and threads, in order of first sample; a process is named
    // by its main thread's command when it has samples.
    let mut procs: HashMap<(u32, i32), fxprof_processed_profile::ProcessHandle> =
        HashMap::default();
    let mut threads: HashMap<(u32, i32, i32), ThreadHandle> = HashMap::default();
    let several = p.captures.len() > 1;
    let mut named: HashMap<(u32, i32), u32> = HashMap::default();
    let process_name = |comm: &str, capture: u32| {
        if several {
            format!("{comm} ({})", p.captures[capture as usize])
        } else {
            comm.to_string()
        }
    };
    for s in &p.samples {
        let comm = p.str(s.comm);
        let t = at(s.capture, s.time_ns);
        let proc = *procs.entry((s.capture, s.pid)).or_insert_with(|| {
            prof.add_process(&process_name(comm, s.capture), s.pid.max(0) as u32, t)
        });
        // The main thread's latest command (after an exec: the program's).
        if s.pid == s.tid && named.insert((s.capture, s.pid), s.comm) != Some(s.comm) {
            prof.set_process_name(proc, &process_name(comm, s.capture));
        }
        threads.entry((s.capture, s.pid, s.tid)).or_insert_with(|| {
            let th = prof.add_thread(proc, s.tid.max(0) as u32, t, s.pid == s.tid);
            prof.set_thread_name(th, comm);
            th
        });
    }
    // Samples, each stack interned once per thread.
    let mut stacks: HashMap<(ThreadHandle, u32), Option<StackHandle>> = HashMap::default();
    let mut positions: Vec<Position> = Vec::new();
    let mut token_of: HashMap<Position, usize> = HashMap::default();
    let mut last: HashMap<ThreadHandle, Timestamp> = HashMap::default();
    // Each location's labels (its inline levels, outermost first), made
    // once: `labels[span[l].0..span[l].1]` once `made[l]`.
    let mut made = vec![false; p.locations.len()];
    let mut span: Vec<(u32, u32)> = vec![(0, 0); p.locations.len()];
    let mut labels: Vec<fxprof_processed_profile::StringHandle> = Vec::new();
    let mut frames: Vec<FrameInfo> = Vec::new();
    for s in &p.samples {
        let th = threads[&(s.capture, s.pid, s.tid)];
        let stack = match s.stack {
            None => None,
            Some(k) => *stacks.entry((th, k)).or_insert_with(|| {
                frames.clear();
                for &l in p.stacks[k as usize].iter().rev() {
                    let l = l as usize;
                    let loc = &p.locations[l];
                    if !made[l] {
                        let from = labels.len() as u32;
                        for line in loc.lines.iter().rev() {
                            let key = (line.function, line.file, line.line);
                            let token = *token_of.entry(key).or_insert_with(|| {
                                positions.push(key);
                                positions.len() - 1
                            });
                            labels.push(prof.intern_string(&format!("{TOKEN}{token}")));
                        }
                        made[l] = true;
                        span[l] = (from, labels.len() as u32);
                    }
                    let cat = if loc.kernel { kernel } else { user };
                    let (a, b) = span[l];
                    frames.extend(labels[a as usize..b as usize].iter().map(|&h| FrameInfo {
                        frame: Frame::Label(h),
                        category_pair: cat,
                        flags: FrameFlags::empty(),
                    }));
                }
                prof.intern_stack_frames(th, frames.drain(..))
            }),
        };
        let t = at(s.capture, s.time_ns);
        let cpu = if cpu_from_period {
            CpuDelta::from_nanos(s.weight.max(0) as u64)
        } else {
            CpuDelta::ZERO
        };
        prof.add_sample(th, t, stack, cpu, s.count.clamp(0, i32::MAX as i64) as i32);
        last.insert(th, t);
    }
    for (th, t) in last {
        prof.set_thread_end_time(th, t);
    }
    p.samples = Vec::new();
    let json = serde_json::to_vec(&prof)?;
    drop(prof);
    add_source_lines(&json, &p, &positions)
}

/// A field of a JSON object: as serialized, or rewritten.
#[derive(Serialize)]
#[serde(untagged)]
enum Field<'a> {
    Raw(&'a RawValue),
    New(Box<RawValue>),
    Threads(Vec<BTreeMap<&'a str, Field<'a>>>),
}

/// Rewrites each thread's tables of a serialized profile whose labels are
/// tokens (indices into `positions`): functions become one per (name,
/// file), with `fileName`; frames point at them and carry their `line`;
/// each token string becomes its function's name. Everything else (the
/// samples, the stack table: most of the bytes) is copied as it is.
fn add_source_lines(
    json: &[u8],
    p: &StackProfile,
    positions: &[Position],
) -> anyhow::Result<Vec<u8>> {
    let top: BTreeMap<String, &RawValue> = serde_json::from_slice(json)?;
    let threads: Vec<BTreeMap<String, &RawValue>> = match top.get("threads") {
        Some(t) => serde_json::from_str(t.get())?,
        None => bail!("the profile has no threads array"),
    };
    let mut new_threads = Vec::with_capacity(threads.len());
    for th in &threads {
        let table = |name: &str| -> anyhow::Result<serde_json::Map<String, Value>> {
            let raw = th
                .get(name)
                .ok_or_else(|| anyhow::anyhow!("a thread has no {name}"))?;
            Ok(serde_json::from_str(raw.get())?)
        };
        let (funcs, mut frames) = (table("funcTable")?, table("frameTable")?);
        let mut strings: Vec<String> = match th.get("stringArray") {
            Some(s) => serde_json::from_str(s.get())?,
            None => bail!("a thread has no stringArray"),
        };
        let column = |t: &serde_json::Map<String, Value>, col: &str| {
            t.get(col)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Value::as_u64).collect::<Vec<_>>())
                .ok_or_else(|| anyhow::anyhow!("no column {col}"))
        };
        let (func_name, frame_func) = (column(&funcs, "name")?, column(&frames, "func")?);
        // Old function (one per token) -> (new function, line).
        let mut new_of: HashMap<(u32, Option<u32>), usize> = HashMap::default();
        let mut file_index: HashMap<u32, usize> = HashMap::default();
        let (mut names, mut files) = (Vec::new(), Vec::new());
        let mut old = Vec::with_capacity(func_name.len());
        for s in &func_name {
            let s = s.ok_or_else(|| anyhow::anyhow!("a function name is not an index"))? as usize;
            let &(function, file, line) = strings
                .get(s)
                .and_then(|t| t.strip_prefix(TOKEN))
                .and_then(|t| t.parse::<usize>().ok())
                .and_then(|k| positions.get(k))
                .ok_or_else(|| anyhow::anyhow!("function name {s} is not a frame token"))?;
            strings[s] = p.str(function).to_string();
            let n = *new_of.entry((function, file)).or_insert_with(|| {
                names.push(s);
                files.push(file.map(|f| {
                    *file_index.entry(f).or_insert_with(|| {
                        strings.push(p.str(f).to_string());
                        strings.len() - 1
                    })
                }));
                names.len() - 1
            });
            old.push((n, line));
        }
        let len = names.len();
        let nulls = || Value::Array(vec![Value::Null; len]);
        let funcs = serde_json::json!({
            "length": len,
            "name": names,
            "isJS": vec![false; len],
            "relevantForJS": vec![false; len],
            "resource": vec![-1; len],
            "fileName": files,
            "lineNumber": nulls(),
            "columnNumber": nulls(),
        });
        let (mut func, mut line) = (Vec::new(), Vec::new());
        for f in &frame_func {
            let &(n, l) = f
                .and_then(|f| old.get(f as usize))
                .ok_or_else(|| anyhow::anyhow!("a frame's function is out of range"))?;
            func.push(Value::from(n));
            line.push(if l == 0 { Value::Null } else { Value::from(l) });
        }
        frames.insert("func".to_string(), Value::Array(func));
        frames.insert("line".to_string(), Value::Array(line));
        let mut out: BTreeMap<&str, Field> = th
            .iter()
            .map(|(k, v)| (k.as_str(), Field::Raw(v)))
            .collect();
        out.insert("funcTable", Field::New(to_raw_value(&funcs)?));
        out.insert("frameTable", Field::New(to_raw_value(&frames)?));
        out.insert("stringArray", Field::New(to_raw_value(&strings)?));
        new_threads.push(out);
    }
    let mut out: BTreeMap<&str, Field> = top
        .iter()
        .map(|(k, v)| (k.as_str(), Field::Raw(v)))
        .collect();
    out.insert("threads", Field::Threads(new_threads));
    // About the input's size (names replace tokens; files are added).
    let mut bytes = Vec::with_capacity(json.len() + json.len() / 16);
    serde_json::to_writer(&mut bytes, &out)?;
    Ok(bytes)
}
