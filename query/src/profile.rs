//! The selected samples with their call stacks as *locations*: a code
//! address in a module with its inline chain of (function, file, line).
//! This is what the exports to other viewers (pprof, Firefox Profiler,
//! speedscope: crate `trawl-export`) are written from; it holds names and
//! numbers only, no format.
//!
//! Inputs: `selected_sample(...)` (the selection: filters and weight, as
//! every stack analysis takes them), `stack`, `frame_line` (one row per
//! frame and inline level) and `module`.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Int32Type, Int64Type, UInt64Type};
use futures::StreamExt;
use rustc_hash::FxHashMap;

use crate::error::Result;
use crate::rows::Interner;
use crate::sample::Selection;
use crate::session::Session;

/// The selected samples and everything their stacks name. Strings
/// (functions, files, commands) are indexes into `strings`.
#[derive(Debug, Default)]
pub struct StackProfile {
    /// The event sampled (e.g. `cpu-clock`).
    pub event: String,
    /// What a sample weighs (`period`, `weight`, `read:EVENT`, ...); None
    /// when each sample counts 1.
    pub weight: Option<String>,
    /// Captures of the samples, by `Sample::capture`.
    pub captures: Vec<String>,
    pub strings: Vec<String>,
    pub modules: Vec<Module>,
    pub locations: Vec<Location>,
    /// Per stack, its locations, leaf first.
    pub stacks: Vec<Vec<u32>>,
    pub samples: Vec<Sample>,
    /// Times of the first and last selected sample (capture clock).
    pub time_range: Option<(i64, i64)>,
}

/// A module (executable, library, kernel) that locations are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    pub path: String,
    pub build_id: Option<String>,
    pub is_kernel: bool,
}

/// A code address: one frame of a stack.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Location {
    /// Index into `modules`; None outside any mapping.
    pub module: Option<u32>,
    /// Address relative to the module (`frame.rel_pc`: a file offset for
    /// files, the address for the kernel and anonymous memory).
    pub rel_pc: u64,
    /// A caller's return address (symbolized inside the call).
    pub is_return: bool,
    /// The frame ran in the kernel (else user space).
    pub kernel: bool,
    /// The inline chain, innermost first: the last entry is the real
    /// function (the ELF symbol). One entry without inline levels.
    pub lines: Vec<Line>,
}

/// One level of a location's inline chain.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Line {
    /// Function name (`strings`); `0x…` for an address no symbol named.
    pub function: u32,
    /// Source file (`strings`), from DWARF.
    pub file: Option<u32>,
    /// Source line (1-based; 0 when unknown).
    pub line: u32,
}

/// Samples of one thread with one stack: a single sample when the profile
/// keeps samples apart (with its time), else all of them summed.
#[derive(Debug, Clone)]
pub struct Sample {
    pub capture: u32,
    pub time_ns: Option<i64>,
    pub pid: i32,
    pub tid: i32,
    /// Command name (`strings`).
    pub comm: u32,
    /// Index into `stacks`; None for a sample without a stack.
    pub stack: Option<u32>,
    /// Samples summed here (1 when kept apart).
    pub count: i64,
    /// Their weight (= count when samples are not weighed).
    pub weight: i64,
}

/// How [`stack_profile`] collects samples.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProfileOpts {
    /// One [`Sample`] per sample, in time order with its time (Firefox
    /// Profiler, speedscope); otherwise summed per (capture, thread,
    /// command, stack) (pprof).
    pub per_sample: bool,
}

/// The selected samples with their stacks (see [`StackProfile`]), read in
/// one pass as the scan delivers them and then put in (capture, sample_id)
/// order in place: no sort of every sample in DataFusion.
pub async fn stack_profile(
    s: &Session,
    sel: &Selection<'_>,
    opts: ProfileOpts,
) -> Result<StackProfile> {
    // The samples as they come (a sort of every selected sample held them
    // all twice over): capture, command and stack numbered in order of
    // arrival, each sample beside its (first) sample_id; then put in
    // order of (capture, sample_id) in place and the numbers made those
    // of first use in that order, so the profile does not depend on the
    // order the scan's partitions delivered in.
    let mut comm_ids: HashMap<String, u32> = HashMap::new();
    let mut cap_ids: HashMap<String, u32> = HashMap::new();
    // Segments (the id spaces of stacks) numbered in order of arrival.
    let mut seg_ids: HashMap<String, u32> = HashMap::new();
    let mut raw: Vec<Sample> = Vec::new();
    let mut first: Vec<i64> = Vec::new();
    let mut arrived_stacks: FxHashMap<(u32, i64), u32> = FxHashMap::default();
    let df = crate::functions::call(s, "selected_sample", &sel.sample_args())
        .await?
        .select_columns(&[
            "capture",
            "sample_id",
            "time_ns",
            "pid",
            "tid",
            "comm",
            "stack_id",
            "cost",
            "segment",
        ])?;
    let mut time_range: Option<(i64, i64)> = None;
    let mut summed: FxHashMap<(u32, i32, i32, u32, Option<u32>), usize> = FxHashMap::default();
    let mut batches = df.execute_stream().await?;
    while let Some(b) = batches.next().await {
        let b = b?;
        let cap = crate::rows::string_ids(b.column(0), &mut cap_ids)?;
        let comm = crate::rows::string_ids(b.column(5), &mut comm_ids)?;
        let seg = crate::rows::string_ids(b.column(8), &mut seg_ids)?;
        let sample_id = b.column(1).as_primitive::<Int64Type>();
        let time = b.column(2).as_primitive::<Int64Type>();
        let pid = b.column(3).as_primitive::<Int32Type>();
        let tid = b.column(4).as_primitive::<Int32Type>();
        let stack = b.column(6).as_primitive::<Int64Type>();
        let cost = b.column(7).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let (c, cm) = (cap[i], comm[i]);
            let w = if cost.is_null(i) { 0 } else { cost.value(i) };
            if !time.is_null(i) {
                let t = time.value(i);
                time_range =
                    Some(time_range.map_or((t, t), |(a, b): (i64, i64)| (a.min(t), b.max(t))));
            }
            let st = (!stack.is_null(i)).then(|| {
                let n = arrived_stacks.len() as u32;
                *arrived_stacks.entry((seg[i], stack.value(i))).or_insert(n)
            });
            let (p, t) = (
                if pid.is_null(i) { -1 } else { pid.value(i) },
                if tid.is_null(i) { -1 } else { tid.value(i) },
            );
            let id = sample_id.value(i);
            if !opts.per_sample {
                if let Some(&k) = summed.get(&(c, p, t, cm, st)) {
                    raw[k].count += 1;
                    raw[k].weight = raw[k].weight.saturating_add(w);
                    first[k] = first[k].min(id);
                    continue;
                }
                summed.insert((c, p, t, cm, st), raw.len());
            }
            raw.push(Sample {
                capture: c,
                time_ns: (opts.per_sample && !time.is_null(i)).then(|| time.value(i)),
                pid: p,
                tid: t,
                comm: cm,
                stack: st,
                count: 1,
                weight: w,
            });
            first.push(id);
        }
    }
    drop(summed);
    raw.shrink_to_fit();
    // Captures numbered in order of name, samples in order of (capture,
    // sample_id).
    let mut names: Vec<(String, u32)> = cap_ids.into_iter().collect();
    names.sort_unstable();
    let mut cap_rank = vec![0u32; names.len()];
    for (rank, (_, old)) in names.iter().enumerate() {
        cap_rank[*old as usize] = rank as u32;
    }
    let caps = Interner::from_names(names.into_iter().map(|(n, _)| n).collect());
    let mut order: Vec<u32> = (0..raw.len() as u32).collect();
    // A stable sort: the samples come as a few runs already in order (one
    // per scan partition, interleaved by batch), which it merges.
    order.sort_by_key(|&i| {
        (
            cap_rank[raw[i as usize].capture as usize],
            first[i as usize],
        )
    });
    drop(first);
    permute(&mut raw, order);
    // Commands and stacks numbered in order of first use.
    let mut strings = Interner::default();
    let mut comms = vec![String::new(); comm_ids.len()];
    for (name, id) in comm_ids {
        comms[id as usize] = name;
    }
    let mut comm_of = vec![u32::MAX; comms.len()];
    let mut stack_of = vec![u32::MAX; arrived_stacks.len()];
    let mut stacks_used = 0u32;
    for smp in raw.iter_mut() {
        smp.capture = cap_rank[smp.capture as usize];
        let cm = &mut comm_of[smp.comm as usize];
        if *cm == u32::MAX {
            *cm = strings.id(&comms[smp.comm as usize]);
        }
        smp.comm = *cm;
        if let Some(st) = &mut smp.stack {
            let n = &mut stack_of[*st as usize];
            if *n == u32::MAX {
                *n = stacks_used;
                stacks_used += 1;
            }
            *st = *n;
        }
    }
    drop(comms);
    // The selected stacks by (segment, stack_id).
    let stack_ids: FxHashMap<(u32, i64), u32> = arrived_stacks
        .into_iter()
        .map(|(k, n)| (k, stack_of[n as usize]))
        .collect();
    let mut positions: Vec<(u32, i32, u32, i64)> = Vec::new(); // (stack, depth, segment, frame_id)
    let mut frames_used: FxHashMap<(u32, i64), u32> = FxHashMap::default();
    for b in s
        .sql("SELECT segment, stack_id, depth, frame_id FROM stack")
        .await?
        .collect()
        .await?
    {
        let cap = crate::rows::string_values(b.column(0));
        let id = b.column(1).as_primitive::<Int64Type>();
        let depth = b.column(2).as_primitive::<Int32Type>();
        let fid = b.column(3).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let Some(c) = cap[i].as_deref().and_then(|n| seg_ids.get(n)).copied() else {
                continue;
            };
            if let Some(&st) = stack_ids.get(&(c, id.value(i))) {
                positions.push((st, depth.value(i), c, fid.value(i)));
                frames_used.insert((c, fid.value(i)), u32::MAX);
            }
        }
    }
    // Modules.
    let mut modules: Vec<Module> = Vec::new();
    let mut module_ids: FxHashMap<(u32, i64), u32> = FxHashMap::default();
    let mut module_index: HashMap<(String, Option<String>), u32> = HashMap::new();
    for b in s
        .sql("SELECT segment, module_id, path, build_id, is_kernel FROM module ORDER BY segment, module_id")
        .await?
        .collect()
        .await?
    {
        let cap = crate::rows::string_values(b.column(0));
        let id = b.column(1).as_primitive::<Int64Type>();
        let path = crate::rows::string_values(b.column(2));
        let build = crate::rows::string_values(b.column(3));
        let kernel = b.column(4).as_boolean();
        for i in 0..b.num_rows() {
            let Some(c) = cap[i].as_deref().and_then(|n| seg_ids.get(n)).copied() else {
                continue;
            };
            let key = (path[i].clone().unwrap_or_default(), build[i].clone());
            let m = *module_index.entry(key.clone()).or_insert_with(|| {
                modules.push(Module {
                    path: key.0,
                    build_id: key.1,
                    is_kernel: !kernel.is_null(i) && kernel.value(i),
                });
                (modules.len() - 1) as u32
            });
            module_ids.insert((c, id.value(i)), m);
        }
    }
    // Locations: each used frame with its inline chain.
    let mut chains: FxHashMap<(u32, i64), (Location, Vec<(i32, Line)>)> = FxHashMap::default();
    for b in s
        .sql(
            "SELECT segment, frame_id, module_id, rel_pc, is_return, context, inline_depth, \
             inlined, function, file, line FROM frame_line",
        )
        .await?
        .collect()
        .await?
    {
        let cap = crate::rows::string_values(b.column(0));
        let fid = b.column(1).as_primitive::<Int64Type>();
        let mid = b.column(2).as_primitive::<Int64Type>();
        let pc = b.column(3).as_primitive::<UInt64Type>();
        let ret = b.column(4).as_boolean();
        let ctx = crate::rows::string_values(b.column(5));
        let lvl = datafusion::arrow::compute::cast(
            b.column(6),
            &datafusion::arrow::datatypes::DataType::Int32,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let lvl = lvl.as_primitive::<Int32Type>();
        let inlined = b.column(7).as_boolean();
        let func = crate::rows::string_values(b.column(8));
        let file = crate::rows::string_values(b.column(9));
        let line = datafusion::arrow::compute::cast(
            b.column(10),
            &datafusion::arrow::datatypes::DataType::Int64,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let line = line.as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let Some(c) = cap[i].as_deref().and_then(|n| seg_ids.get(n)).copied() else {
                continue;
            };
            let key = (c, fid.value(i));
            if !frames_used.contains_key(&key) {
                continue;
            }
            // Without inline levels, only the real function counts (with
            // the source line of its own level: the call site of what was
            // inlined, else the instruction's).
            if !sel.opts.inline && !inlined.is_null(i) && inlined.value(i) {
                continue;
            }
            let l = Line {
                function: strings.id(func[i].as_deref().unwrap_or("")),
                file: file[i].as_deref().map(|f| strings.id(f)),
                line: if line.is_null(i) {
                    0
                } else {
                    line.value(i).clamp(0, u32::MAX as i64) as u32
                },
            };
            let e = chains.entry(key).or_insert_with(|| {
                (
                    Location {
                        module: (!mid.is_null(i))
                            .then(|| module_ids.get(&(c, mid.value(i))).copied())
                            .flatten(),
                        rel_pc: pc.value(i),
                        is_return: !ret.is_null(i) && ret.value(i),
                        kernel: ctx[i].as_deref().is_some_and(|x| x.contains("kernel")),
                        lines: Vec::new(),
                    },
                    Vec::new(),
                )
            });
            e.1.push((lvl.value(i), l));
        }
    }
    // Equal locations of different segments become one.
    let mut locations: Vec<Location> = Vec::new();
    let mut loc_index: HashMap<Location, u32> = HashMap::new();
    let mut chains: Vec<_> = chains.into_iter().collect();
    chains.sort_unstable_by_key(|(k, _)| *k);
    for (key, (mut loc, mut levels)) in chains {
        levels.sort_by_key(|(d, _)| *d);
        loc.lines = levels.into_iter().map(|(_, l)| l).collect();
        let n = locations.len() as u32;
        let id = *loc_index.entry(loc.clone()).or_insert_with(|| {
            locations.push(loc);
            n
        });
        frames_used.insert(key, id);
    }
    positions.sort_unstable();
    let mut stacks: Vec<Vec<u32>> = vec![Vec::new(); stack_ids.len()];
    for (st, _, c, fid) in positions {
        if let Some(&l) = frames_used.get(&(c, fid)).filter(|&&l| l != u32::MAX) {
            stacks[st as usize].push(l);
        }
    }
    Ok(StackProfile {
        event: sel.event.to_string(),
        weight: sel.weight.name().map(|_| sel.weight.arg()),
        captures: caps.into_names(),
        strings: strings.into_names(),
        modules,
        locations,
        stacks,
        samples: raw,
        time_range,
    })
}

/// Puts `v` in the order `order` gives (`v[i]` becomes the old
/// `v[order[i]]`), in place: each cycle of the permutation followed once.
fn permute<T>(v: &mut [T], mut order: Vec<u32>) {
    const DONE: u32 = u32::MAX;
    for i in 0..v.len() {
        let mut at = i;
        while order[at] != DONE {
            let from = order[at] as usize;
            order[at] = DONE;
            if from == i {
                break;
            }
            v.swap(at, from);
            at = from;
        }
    }
}

impl StackProfile {
    /// A string by index.
    pub fn str(&self, i: u32) -> &str {
        &self.strings[i as usize]
    }

    /// Total weight of the samples.
    pub fn total_weight(&self) -> i64 {
        self.samples
            .iter()
            .fold(0i64, |a, s| a.saturating_add(s.weight))
    }

    /// Number of samples.
    pub fn total_count(&self) -> i64 {
        self.samples.iter().map(|s| s.count).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::permute;

    #[test]
    fn permute_puts_each_element_where_the_order_says() {
        // Worked by hand: v[i] becomes the old v[order[i]]; a fixed point,
        // a 2-cycle and a 3-cycle.
        let mut v = vec!['a', 'b', 'c', 'd', 'e', 'f'];
        permute(&mut v, vec![0, 2, 1, 4, 5, 3]);
        assert_eq!(v, vec!['a', 'c', 'b', 'e', 'f', 'd']);
        let mut empty: Vec<u8> = Vec::new();
        permute(&mut empty, Vec::new());
        assert!(empty.is_empty());
    }
}
