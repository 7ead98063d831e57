//! The Firefox Profiler's processed profile format (the JSON its "Load a
//! profile from file" reads, `preprocessedProfileVersion` 55: the version
//! samply writes), written straight from the profile's tables:
//!
//! - one process per (capture, pid) named by its main thread's command,
//!   one thread per tid, named by its command;
//! - every sample at its time (relative to the capture's first selected
//!   sample), with weight 1: the Profiler's call tree counts samples;
//!   for a clock event (`cpu-clock`, `task-clock`) weighed by period the
//!   period is the sample's CPU delta (the Profiler's CPU graph);
//! - frames are the function names, root first, each inline level a frame
//!   of its own (the innermost last), in category `User` or `Kernel`;
//! - source lines: one function per (name, file) with its file in
//!   `funcTable.fileName`, each frame's line in `frameTable.line` (the
//!   Profiler's source view counts samples per line from it).
//!
//! Each thread's tables (strings, functions, frames, the stack prefix tree,
//! samples) are its own, so threads are built and serialized in parallel
//! and joined in the Profiler's order: processes by start time, a
//! process's main thread first.

use std::io::Write;

use anyhow::bail;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;
use serde::ser::{SerializeSeq, Serializer};
use serde::Serialize;
use trawl_query::profile::StackProfile;

/// Writes `p` to `w` in the Firefox Profiler's processed format (JSON);
/// returns the bytes written. `interval_ns` is the sampling interval the
/// Profiler assumes between samples (its CPU graph and durations).
pub fn write(
    p: &StackProfile,
    product: &str,
    interval_ns: u64,
    w: &mut dyn Write,
) -> anyhow::Result<u64> {
    let cpu_from_period = match p.weight.as_deref() {
        None => false,
        Some("period") => crate::units::is_time_event(&p.event),
        Some(w) => bail!(
            "the Firefox Profiler counts samples: --weight {w} cannot be written \
             (use --weight samples or period, or export --to pprof/speedscope)"
        ),
    };
    let threads = threads(p);
    // Each thread's JSON, in parallel; a thread's tables are let go once
    // it is serialized.
    let parts: Vec<Vec<u8>> = threads
        .par_iter()
        .map(|t| {
            let mut out = Vec::new();
            serde_json::to_writer(&mut out, &build(p, t, cpu_from_period))?;
            Ok(out)
        })
        .collect::<anyhow::Result<_>>()?;
    let mut w = Counting { w, n: 0 };
    w.write_all(b"{\"meta\":")?;
    serde_json::to_writer(&mut w, &meta(product, interval_ns))?;
    w.write_all(b",\"libs\":[],\"threads\":[")?;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        w.write_all(part)?;
    }
    w.write_all(b"],\"pages\":[],\"profilerOverhead\":[],\"counters\":[]}")?;
    Ok(w.n)
}

/// Counts what passes to the writer.
struct Counting<'a> {
    w: &'a mut dyn Write,
    n: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.w.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.w.flush()
    }
}

/// The profile's `meta`: its three categories (the Profiler's default
/// `Other` first), units and interval.
fn meta(product: &str, interval_ns: u64) -> serde_json::Value {
    let category = |name: &str, color: &str| serde_json::json!({"name": name, "color": color, "subcategories": ["Other"]});
    serde_json::json!({
        "categories": [category("Other", "grey"), category("User", "yellow"), category("Kernel", "orange")],
        "debug": false,
        "extensions": {"length": 0, "baseURL": [], "id": [], "name": []},
        "interval": interval_ns.max(1) as f64 / 1e6,
        "preprocessedProfileVersion": 55,
        "processType": 0,
        "product": product,
        "sampleUnits": {"time": "ms", "eventDelay": "ms", "threadCPUDelta": "µs"},
        "startTime": 0.0,
        "symbolicated": false,
        "pausedRanges": [],
        "version": 24,
        "usesOnlyOneStackType": true,
        "sourceCodeIsNotOnSearchfox": true,
        "markerSchema": [],
    })
}

/// One thread of the profile: its samples (indexes into `p.samples`, in
/// profile order) and what the Profiler shows of it and its process.
struct Thread {
    pid: i32,
    tid: i32,
    is_main: bool,
    /// Its first sample's command (`p.strings`).
    comm: u32,
    name: String,
    process_name: String,
    /// First and last sample (ns from the capture's first sample).
    start: u64,
    end: u64,
    process_start: u64,
    samples: Vec<u32>,
    /// Each sample's time (ns from its capture's first sample).
    times: Vec<u64>,
}

/// The profile's threads in the order the Profiler lists them:
/// processes by (start, pid, capture), a process's main thread first,
/// then by (start, name, tid).
fn threads(p: &StackProfile) -> Vec<Thread> {
    // Each capture's clock starts at its first selected sample.
    let mut start: HashMap<u32, i64> = HashMap::default();
    for s in &p.samples {
        if let Some(t) = s.time_ns {
            let e = start.entry(s.capture).or_insert(t);
            *e = (*e).min(t);
        }
    }
    struct Proc {
        capture: u32,
        pid: i32,
        /// The main thread's latest command (after an exec: the
        /// program's), else the first sample's.
        comm: u32,
        start: u64,
        threads: Vec<usize>,
    }
    let mut procs: Vec<Proc> = Vec::new();
    let mut proc_of: HashMap<(u32, i32), usize> = HashMap::default();
    let mut threads: Vec<Thread> = Vec::new();
    let mut thread_of: HashMap<(u32, i32, i32), usize> = HashMap::default();
    for (i, s) in p.samples.iter().enumerate() {
        let t0 = start.get(&s.capture).copied().unwrap_or(0);
        let t = s.time_ns.map_or(0, |t| t.saturating_sub(t0).max(0) as u64);
        let pr = *proc_of.entry((s.capture, s.pid)).or_insert_with(|| {
            procs.push(Proc {
                capture: s.capture,
                pid: s.pid,
                comm: s.comm,
                start: t,
                threads: Vec::new(),
            });
            procs.len() - 1
        });
        let proc = &mut procs[pr];
        proc.start = proc.start.min(t);
        if s.pid == s.tid {
            proc.comm = s.comm;
        }
        let th = *thread_of
            .entry((s.capture, s.pid, s.tid))
            .or_insert_with(|| {
                proc.threads.push(threads.len());
                threads.push(Thread {
                    pid: s.pid,
                    tid: s.tid,
                    is_main: s.pid == s.tid,
                    comm: s.comm,
                    name: String::new(),
                    process_name: String::new(),
                    start: t,
                    end: t,
                    process_start: 0,
                    samples: Vec::new(),
                    times: Vec::new(),
                });
                threads.len() - 1
            });
        let th = &mut threads[th];
        th.start = th.start.min(t);
        th.end = th.end.max(t);
        th.samples.push(i as u32);
        th.times.push(t);
    }
    let several = p.captures.len() > 1;
    let mut order: Vec<usize> = (0..procs.len()).collect();
    order.sort_by_key(|&i| (procs[i].start, procs[i].pid, procs[i].capture));
    let mut slots: Vec<Option<Thread>> = threads.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(slots.len());
    for pr in order {
        let proc = &procs[pr];
        let comm = p.str(proc.comm);
        let process_name = if several {
            format!("{comm} ({})", p.captures[proc.capture as usize])
        } else {
            comm.to_string()
        };
        let mut own: Vec<Thread> = proc
            .threads
            .iter()
            .map(|&i| {
                let mut t = slots[i].take().expect("a thread is in one process");
                t.name = if t.is_main {
                    process_name.clone()
                } else {
                    p.str(t.comm).to_string()
                };
                t.process_name = process_name.clone();
                t.process_start = proc.start;
                t
            })
            .collect();
        own.sort_by(|a, b| {
            (!a.is_main, a.start, &a.name, a.tid).cmp(&(!b.is_main, b.start, &b.name, b.tid))
        });
        out.extend(own);
    }
    out
}

/// One thread's tables, as the Profiler reads them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThreadJson<'a> {
    frame_table: FrameTable,
    func_table: FuncTable,
    markers: serde_json::Value,
    name: &'a str,
    is_main_thread: bool,
    native_symbols: serde_json::Value,
    paused_ranges: [(); 0],
    pid: String,
    process_name: &'a str,
    process_shutdown_time: Option<f64>,
    process_startup_time: f64,
    process_type: &'static str,
    register_time: f64,
    resource_table: serde_json::Value,
    samples: Samples,
    stack_table: StackTable,
    string_array: Vec<&'a str>,
    tid: String,
    unregister_time: f64,
    show_markers_in_timeline: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FrameTable {
    length: usize,
    address: Repeat<i32>,
    inline_depth: Repeat<u32>,
    category: Vec<u8>,
    subcategory: Repeat<u32>,
    func: Vec<u32>,
    native_symbol: Repeat<()>,
    #[serde(rename = "innerWindowID")]
    inner_window_id: Repeat<u32>,
    /// 0: unknown (null).
    #[serde(serialize_with = "zero_is_null")]
    line: Vec<u32>,
    column: Repeat<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FuncTable {
    length: usize,
    name: Vec<u32>,
    #[serde(rename = "isJS")]
    is_js: Repeat<bool>,
    #[serde(rename = "relevantForJS")]
    relevant_for_js: Repeat<bool>,
    resource: Repeat<i32>,
    file_name: Vec<Option<u32>>,
    line_number: Repeat<()>,
    column_number: Repeat<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Samples {
    length: usize,
    weight_type: &'static str,
    stack: Vec<Option<u32>>,
    /// Milliseconds from the previous sample (the first: from 0).
    time_deltas: Vec<f64>,
    weight: Vec<i32>,
    /// Microseconds.
    #[serde(rename = "threadCPUDelta")]
    thread_cpu_delta: Vec<u64>,
}

#[derive(Serialize)]
struct StackTable {
    length: usize,
    prefix: Vec<Option<u32>>,
    frame: Vec<u32>,
}

/// A column of one value.
struct Repeat<T>(T, usize);

impl<T: Serialize> Serialize for Repeat<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.1))?;
        for _ in 0..self.1 {
            seq.serialize_element(&self.0)?;
        }
        seq.end()
    }
}

fn zero_is_null<S: Serializer>(v: &[u32], s: S) -> Result<S::Ok, S::Error> {
    let mut seq = s.serialize_seq(Some(v.len()))?;
    for &x in v {
        seq.serialize_element(&(x != 0).then_some(x))?;
    }
    seq.end()
}

/// Builds one thread's tables: its strings, functions (name, file),
/// frames (function, line, category), stacks (prefix, frame) and samples,
/// each interned as the thread's samples first name them.
fn build<'a>(p: &'a StackProfile, t: &'a Thread, cpu_from_period: bool) -> ThreadJson<'a> {
    let mut strings: Vec<&str> = Vec::new();
    let mut string_of: HashMap<u32, u32> = HashMap::default();
    let mut string = |i: u32| -> u32 {
        *string_of.entry(i).or_insert_with(|| {
            strings.push(p.str(i));
            strings.len() as u32 - 1
        })
    };
    let (mut func_name, mut func_file) = (Vec::new(), Vec::new());
    let mut func_of: HashMap<(u32, Option<u32>), u32> = HashMap::default();
    let (mut frame_func, mut frame_line, mut frame_cat) = (Vec::new(), Vec::new(), Vec::new());
    let mut frame_of: HashMap<(u32, u32, bool), u32> = HashMap::default();
    // Each location's frames (outermost inline level first), made once.
    let mut loc_frames: HashMap<u32, (u32, u32)> = HashMap::default();
    let mut frames: Vec<u32> = Vec::new();
    let (mut prefix, mut node_frame) = (Vec::new(), Vec::new());
    let mut node_of: HashMap<(u32, u32), u32> = HashMap::default();
    let mut stack_of: HashMap<u32, u32> = HashMap::default();

    // Samples in time order (they are, unless a capture's were written
    // out of order).
    let mut order: Vec<u32> = (0..t.samples.len() as u32).collect();
    if t.times.windows(2).any(|w| w[1] < w[0]) {
        order.sort_by_key(|&i| t.times[i as usize]);
    }
    let n = order.len();
    let mut samples = Samples {
        length: n,
        weight_type: "samples",
        stack: Vec::with_capacity(n),
        time_deltas: Vec::with_capacity(n),
        weight: Vec::with_capacity(n),
        thread_cpu_delta: Vec::with_capacity(n),
    };
    let mut prev = 0u64;
    for &i in &order {
        let s = &p.samples[t.samples[i as usize] as usize];
        let time = t.times[i as usize];
        samples
            .time_deltas
            .push(time.saturating_sub(prev) as f64 / 1e6);
        prev = time;
        samples
            .weight
            .push(s.count.clamp(0, i32::MAX as i64) as i32);
        samples.thread_cpu_delta.push(if cpu_from_period {
            s.weight.max(0) as u64 / 1000
        } else {
            0
        });
        let stack = s.stack.map(|k| {
            if let Some(&node) = stack_of.get(&k) {
                return node;
            }
            // Root first: each location's frames, each a node under the
            // one before.
            let mut node: Option<u32> = None;
            for &l in p.stacks[k as usize].iter().rev() {
                let (a, b) = *loc_frames.entry(l).or_insert_with(|| {
                    let loc = &p.locations[l as usize];
                    let a = frames.len() as u32;
                    for line in loc.lines.iter().rev() {
                        let func =
                            *func_of
                                .entry((line.function, line.file))
                                .or_insert_with(|| {
                                    func_name.push(string(line.function));
                                    func_file.push(line.file.map(&mut string));
                                    func_name.len() as u32 - 1
                                });
                        let frame = *frame_of
                            .entry((func, line.line, loc.kernel))
                            .or_insert_with(|| {
                                frame_func.push(func);
                                frame_line.push(line.line);
                                frame_cat.push(if loc.kernel { 2 } else { 1 });
                                frame_func.len() as u32 - 1
                            });
                        frames.push(frame);
                    }
                    (a, frames.len() as u32)
                });
                for &frame in &frames[a as usize..b as usize] {
                    let key = (node.map_or(0, |n| n + 1), frame);
                    node = Some(*node_of.entry(key).or_insert_with(|| {
                        prefix.push(node);
                        node_frame.push(frame);
                        node_frame.len() as u32 - 1
                    }));
                }
            }
            // A stack of no frames: its samples have none.
            let node = node.unwrap_or(u32::MAX);
            stack_of.insert(k, node);
            node
        });
        samples.stack.push(stack.filter(|&n| n != u32::MAX));
    }
    let (funcs, frames_n, nodes) = (func_name.len(), frame_func.len(), prefix.len());
    let at = |ns: u64| ns as f64 / 1e6;
    ThreadJson {
        frame_table: FrameTable {
            length: frames_n,
            address: Repeat(-1, frames_n),
            inline_depth: Repeat(0, frames_n),
            category: frame_cat,
            subcategory: Repeat(0, frames_n),
            func: frame_func,
            native_symbol: Repeat((), frames_n),
            inner_window_id: Repeat(0, frames_n),
            line: frame_line,
            column: Repeat((), frames_n),
        },
        func_table: FuncTable {
            length: funcs,
            name: func_name,
            is_js: Repeat(false, funcs),
            relevant_for_js: Repeat(false, funcs),
            resource: Repeat(-1, funcs),
            file_name: func_file,
            line_number: Repeat((), funcs),
            column_number: Repeat((), funcs),
        },
        markers: serde_json::json!({
            "length": 0, "category": [], "data": [], "endTime": [],
            "name": [], "phase": [], "startTime": [],
        }),
        name: &t.name,
        is_main_thread: t.is_main,
        native_symbols: serde_json::json!({
            "length": 0, "address": [], "functionSize": [], "libIndex": [], "name": [],
        }),
        paused_ranges: [],
        pid: t.pid.max(0).to_string(),
        process_name: &t.process_name,
        process_shutdown_time: None,
        process_startup_time: at(t.process_start),
        process_type: "default",
        register_time: at(t.start),
        resource_table: serde_json::json!({
            "length": 0, "lib": [], "name": [], "host": [], "type": [],
        }),
        samples,
        stack_table: StackTable {
            length: nodes,
            prefix,
            frame: node_frame,
        },
        string_array: strings,
        tid: t.tid.max(0).to_string(),
        unregister_time: at(t.end),
        show_markers_in_timeline: false,
    }
}
