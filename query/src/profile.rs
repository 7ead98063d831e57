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
use crate::spill::{Raw, Spilled};

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
    pub stacks: Stacks,
    /// The samples, in order of (capture, sample_id) when kept apart;
    /// empty when they were spilled to disk (see [`StackProfile::sample_iter`]).
    pub samples: Vec<Sample>,
    /// The samples when they were more than [`ProfileOpts::spill_at`].
    pub spilled: Option<Spilled>,
    /// Times of the first and last selected sample (capture clock).
    pub time_range: Option<(i64, i64)>,
}

/// Stacks of locations, each a slice (leaf first), held in one vector
/// (a profile has hundreds of thousands: one allocation each cost their
/// building and their freeing).
#[derive(Debug, Default, Clone)]
pub struct Stacks {
    locations: Vec<u32>,
    /// Where each stack ends in `locations`.
    ends: Vec<usize>,
}

impl Stacks {
    /// Adds a stack; its index is the number of stacks before it.
    pub fn push(&mut self, locations: impl IntoIterator<Item = u32>) {
        self.locations.extend(locations);
        self.ends.push(self.locations.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u32]> + '_ {
        (0..self.len()).map(|i| &self[i])
    }
}

impl std::ops::Index<usize> for Stacks {
    type Output = [u32];

    fn index(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.locations[start..self.ends[i]]
    }
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
    /// With `per_sample`: at most this many samples are held in memory;
    /// beyond, they go to temporary files in sorted runs, read back
    /// merged by [`StackProfile::sample_iter`] (memory bounded by the
    /// distinct stacks, not the samples).
    pub spill_at: Option<usize>,
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
    // The frames' lines do not depend on the samples: read on a task of
    // their own while the samples and stacks are.
    let frame_df = s.sql(FRAME_LINES).await?;
    let frame_rows = tokio::spawn(async move { frame_df.collect().await });
    let mut comm_ids: HashMap<String, u32> = HashMap::new();
    let mut cap_ids: HashMap<String, u32> = HashMap::new();
    // Captures by number of arrival: their names order them.
    let mut cap_names: Vec<String> = Vec::new();
    // Segments (the id spaces of stacks) numbered in order of arrival.
    let mut seg_ids: HashMap<String, u32> = HashMap::new();
    let mut raw: Vec<Sample> = Vec::new();
    let mut first: Vec<i64> = Vec::new();
    let mut arrived_stacks: FxHashMap<(u32, i64), u32> = FxHashMap::default();
    // Per stack and command (numbered in order of arrival): the first
    // sample that names it, as (capture, sample_id). Their order is the
    // order of first use in the profile's order of samples, whatever
    // order the scan delivered in.
    let mut stack_first: Vec<(u32, i64)> = Vec::new();
    let mut comm_first: Vec<(u32, i64)> = Vec::new();
    // Samples beyond `spill_at`, in sorted runs on disk.
    let spill_at = opts.spill_at.filter(|_| opts.per_sample);
    let mut spilled: Option<Spilled> = None;
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
        if cap_ids.len() > cap_names.len() {
            cap_names.resize(cap_ids.len(), String::new());
            let names = crate::rows::string_values(b.column(0));
            for (i, &c) in cap.iter().enumerate() {
                if cap_names[c as usize].is_empty() {
                    cap_names[c as usize] = names[i].clone().unwrap_or_default();
                }
            }
        }
        let comm = crate::rows::string_ids(b.column(5), &mut comm_ids)?;
        let seg = crate::rows::string_ids(b.column(8), &mut seg_ids)?;
        let sample_id = b.column(1).as_primitive::<Int64Type>();
        let time = b.column(2).as_primitive::<Int64Type>();
        let pid = b.column(3).as_primitive::<Int32Type>();
        let tid = b.column(4).as_primitive::<Int32Type>();
        let stack = b.column(6).as_primitive::<Int64Type>();
        let cost = b.column(7).as_primitive::<Int64Type>();
        let before = |a: (u32, i64), b: (u32, i64)| {
            if a.0 == b.0 {
                a.1 < b.1
            } else {
                (&cap_names[a.0 as usize], a.1) < (&cap_names[b.0 as usize], b.1)
            }
        };
        let lower = |slots: &mut Vec<(u32, i64)>, at: u32, key: (u32, i64)| {
            let at = at as usize;
            if slots.len() <= at {
                slots.resize(at + 1, (u32::MAX, i64::MAX));
            }
            if slots[at].0 == u32::MAX || before(key, slots[at]) {
                slots[at] = key;
            }
        };
        for i in 0..b.num_rows() {
            let (c, cm) = (cap[i], comm[i]);
            let w = if cost.is_null(i) { 0 } else { cost.value(i) };
            if !time.is_null(i) {
                let t = time.value(i);
                time_range =
                    Some(time_range.map_or((t, t), |(a, b): (i64, i64)| (a.min(t), b.max(t))));
            }
            let id = sample_id.value(i);
            let st = (!stack.is_null(i)).then(|| {
                let n = arrived_stacks.len() as u32;
                *arrived_stacks.entry((seg[i], stack.value(i))).or_insert(n)
            });
            if let Some(st) = st {
                lower(&mut stack_first, st, (c, id));
            }
            lower(&mut comm_first, cm, (c, id));
            let (p, t) = (
                if pid.is_null(i) { -1 } else { pid.value(i) },
                if tid.is_null(i) { -1 } else { tid.value(i) },
            );
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
        if spill_at.is_some_and(|n| raw.len() >= n) {
            spill(&mut raw, &mut first, &cap_names, &mut spilled)?;
        }
    }
    drop(summed);
    if spilled.is_some() {
        spill(&mut raw, &mut first, &cap_names, &mut spilled)?;
    }
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
    let by_first_use = |firsts: &[(u32, i64)]| {
        let mut order: Vec<u32> = (0..firsts.len() as u32).collect();
        order.sort_unstable_by_key(|&i| {
            let (c, id) = firsts[i as usize];
            (cap_rank.get(c as usize).copied().unwrap_or(u32::MAX), id, i)
        });
        order
    };
    let mut strings = Interner::default();
    let mut comms = vec![String::new(); comm_ids.len()];
    for (name, id) in comm_ids {
        comms[id as usize] = name;
    }
    let mut comm_of = vec![u32::MAX; comms.len()];
    for cm in by_first_use(&comm_first) {
        comm_of[cm as usize] = strings.id(&comms[cm as usize]);
    }
    drop(comms);
    let n_comms = comm_of.len() as u32;
    let mut stack_of = vec![u32::MAX; arrived_stacks.len()];
    for (n, st) in by_first_use(&stack_first).into_iter().enumerate() {
        stack_of[st as usize] = n as u32;
    }
    for smp in raw.iter_mut() {
        smp.capture = cap_rank[smp.capture as usize];
        smp.comm = comm_of[smp.comm as usize];
        if let Some(st) = &mut smp.stack {
            *st = stack_of[*st as usize];
        }
    }
    // The selected stacks by (segment, stack_id).
    let stack_ids: FxHashMap<(u32, i64), u32> = arrived_stacks
        .into_iter()
        .map(|(k, n)| (k, stack_of[n as usize]))
        .collect();
    // Per selected stack: its segment, and its (depth, frame_id) rows: a
    // run of `flat` (a stack's rows come together), and in `split` what
    // came apart from its run.
    let mut stack_seg: Vec<u32> = vec![0; stack_ids.len()];
    let mut flat: Vec<(i32, i64)> = Vec::new();
    let mut run_of: Vec<(usize, usize)> = vec![(0, 0); stack_ids.len()];
    let mut split: FxHashMap<u32, Vec<(i32, i64)>> = FxHashMap::default();
    let mut in_run: Option<u32> = None;
    // Used frames: their location once known (USED until then).
    let mut frames_used = FrameMap::default();
    let mut rows = s
        .sql("SELECT segment, stack_id, depth, frame_id FROM stack")
        .await?
        .execute_stream()
        .await?;
    while let Some(b) = rows.next().await {
        let b = b?;
        let cap = segments(b.column(0), &seg_ids)?;
        let id = b.column(1).as_primitive::<Int64Type>();
        let depth = b.column(2).as_primitive::<Int32Type>();
        let fid = b.column(3).as_primitive::<Int64Type>();
        // A stack's rows come together: looked up once.
        let mut last: Option<((u32, i64), Option<u32>)> = None;
        for i in 0..b.num_rows() {
            let Some(c) = cap[i] else {
                continue;
            };
            let key = (c, id.value(i));
            let st = match last {
                Some((k, st)) if k == key => st,
                _ => stack_ids.get(&key).copied(),
            };
            last = Some((key, st));
            if let Some(st) = st {
                stack_seg[st as usize] = c;
                let row = (depth.value(i), fid.value(i));
                let run = &mut run_of[st as usize];
                if in_run == Some(st) {
                    flat.push(row);
                    run.1 += 1;
                } else if run.1 == 0 {
                    *run = (flat.len(), 1);
                    flat.push(row);
                    in_run = Some(st);
                } else {
                    split.entry(st).or_default().push(row);
                    in_run = None;
                }
                frames_used.set(c, fid.value(i), USED);
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
    let frame_rows = frame_rows
        .await
        .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))??;
    for b in frame_rows {
        let cap = segments(b.column(0), &seg_ids)?;
        let fid = b.column(1).as_primitive::<Int64Type>();
        let mid = b.column(2).as_primitive::<Int64Type>();
        let pc = b.column(3).as_primitive::<UInt64Type>();
        let ret = b.column(4).as_boolean();
        let ctx = utf8(b.column(5))?;
        let ctx = ctx.as_string::<i32>();
        let lvl = datafusion::arrow::compute::cast(
            b.column(6),
            &datafusion::arrow::datatypes::DataType::Int32,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let lvl = lvl.as_primitive::<Int32Type>();
        let inlined = b.column(7).as_boolean();
        let func = utf8(b.column(8))?;
        let func = func.as_string::<i32>();
        let file = utf8(b.column(9))?;
        let file = file.as_string::<i32>();
        let line = datafusion::arrow::compute::cast(
            b.column(10),
            &datafusion::arrow::datatypes::DataType::Int64,
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let line = line.as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let Some(c) = cap[i] else {
                continue;
            };
            let key = (c, fid.value(i));
            if frames_used.get(c, key.1).is_none() {
                continue;
            }
            // Without inline levels, only the real function counts (with
            // the source line of its own level: the call site of what was
            // inlined, else the instruction's).
            if !sel.opts.inline && !inlined.is_null(i) && inlined.value(i) {
                continue;
            }
            let l = Line {
                function: strings.id(if func.is_null(i) { "" } else { func.value(i) }),
                file: (!file.is_null(i)).then(|| strings.id(file.value(i))),
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
                        kernel: !ctx.is_null(i) && ctx.value(i).contains("kernel"),
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
    let mut loc_index: FxHashMap<Location, u32> = FxHashMap::default();
    let mut chains: Vec<_> = chains.into_iter().collect();
    // In order of (segment name, frame_id): segments are numbered in the
    // order the scan delivered them, which varies from run to run.
    let mut seg_rank = vec![0u32; seg_ids.len()];
    let mut by_name: Vec<(&String, &u32)> = seg_ids.iter().collect();
    by_name.sort_unstable();
    for (rank, (_, &id)) in by_name.into_iter().enumerate() {
        seg_rank[id as usize] = rank as u32;
    }
    chains.sort_unstable_by_key(|((seg, fid), _)| (seg_rank[*seg as usize], *fid));
    // (In one segment, frames are distinct locations already.)
    let one_segment = seg_ids.len() == 1;
    for (key, (mut loc, mut levels)) in chains {
        levels.sort_by_key(|(d, _)| *d);
        loc.lines = levels.into_iter().map(|(_, l)| l).collect();
        let n = locations.len() as u32;
        let id = if one_segment {
            locations.push(loc);
            n
        } else {
            *loc_index.entry(loc.clone()).or_insert_with(|| {
                locations.push(loc);
                n
            })
        };
        frames_used.set(key.0, key.1, id);
    }
    // Strings numbered in order of first use (commands, then the
    // locations in order), whatever order the frames' rows came in.
    let mut old = strings.into_names();
    let mut names: Vec<String> = Vec::with_capacity(old.len());
    let mut renumbered = vec![u32::MAX; old.len()];
    let mut renumber = |i: &mut u32| {
        let n = &mut renumbered[*i as usize];
        if *n == u32::MAX {
            *n = names.len() as u32;
            names.push(std::mem::take(&mut old[*i as usize]));
        }
        *i = *n;
    };
    // The commands, interned first in order of first use, keep their
    // numbers.
    for mut cm in 0..n_comms {
        renumber(&mut cm);
    }
    for l in locations.iter_mut().flat_map(|l| l.lines.iter_mut()) {
        renumber(&mut l.function);
        if let Some(f) = &mut l.file {
            renumber(f);
        }
    }
    let mut rows: Vec<(i32, i64)> = Vec::new();
    let mut stacks = Stacks::default();
    stacks.ends.reserve(stack_ids.len());
    for st in 0..stack_ids.len() {
        let (start, n) = run_of[st];
        let mut run = &flat[start..start + n];
        if let Some(more) = split.get(&(st as u32)) {
            rows.clear();
            rows.extend_from_slice(run);
            rows.extend_from_slice(more);
            rows.sort_unstable();
            run = &rows;
        } else if !run.is_sorted() {
            // The table's rows come in depth order; sorted when not.
            rows.clear();
            rows.extend_from_slice(run);
            rows.sort_unstable();
            run = &rows;
        }
        let c = stack_seg[st];
        stacks.push(
            run.iter()
                .filter_map(|&(_, fid)| frames_used.get(c, fid))
                .filter(|&l| l != USED),
        );
    }
    Ok(StackProfile {
        event: sel.event.to_string(),
        weight: sel.weight.name().map(|_| sel.weight.arg()),
        captures: caps.into_names(),
        strings: names,
        modules,
        locations,
        stacks,
        samples: raw,
        spilled: spilled.map(|mut sp| {
            sp.capture = cap_rank;
            sp.comm = comm_of;
            sp.stack = stack_of;
            sp
        }),
        time_range,
    })
}

/// Sorts the samples held by (capture name, first sample_id) and writes
/// them to disk as a run of `spilled`.
fn spill(
    raw: &mut Vec<Sample>,
    first: &mut Vec<i64>,
    cap_names: &[String],
    spilled: &mut Option<Spilled>,
) -> Result<()> {
    let mut order: Vec<u32> = (0..raw.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        let (x, y) = (raw[a].capture as usize, raw[b].capture as usize);
        if x == y {
            first[a].cmp(&first[b])
        } else {
            (&cap_names[x], first[a]).cmp(&(&cap_names[y], first[b]))
        }
    });
    let run = order.iter().map(|&i| {
        let s = &raw[i as usize];
        Raw {
            capture: s.capture,
            first: first[i as usize],
            time_ns: s.time_ns,
            pid: s.pid,
            tid: s.tid,
            comm: s.comm,
            stack: s.stack,
            weight: s.weight,
        }
    });
    spilled
        .get_or_insert_with(Spilled::default)
        .push(run)
        .map_err(datafusion::error::DataFusionError::from)?;
    raw.clear();
    first.clear();
    Ok(())
}

/// A frame that is used, before its location is known.
const USED: u32 = u32::MAX - 1;

/// A u32 per (segment, frame_id): in a vector per segment for the ids
/// ingest gives (0, 1, 2, ... in each segment), in a map for others.
#[derive(Default)]
struct FrameMap {
    dense: Vec<Vec<u32>>,
    sparse: FxHashMap<(u32, i64), u32>,
}

/// Frame ids below this are kept in the vectors (4 bytes each).
const DENSE_IDS: i64 = 1 << 24;
const ABSENT: u32 = u32::MAX;

impl FrameMap {
    fn set(&mut self, seg: u32, fid: i64, v: u32) {
        if (0..DENSE_IDS).contains(&fid) {
            if self.dense.len() <= seg as usize {
                self.dense.resize_with(seg as usize + 1, Vec::new);
            }
            let d = &mut self.dense[seg as usize];
            if d.len() <= fid as usize {
                d.resize((fid as usize + 1).max(d.len() * 2), ABSENT);
            }
            d[fid as usize] = v;
        } else {
            self.sparse.insert((seg, fid), v);
        }
    }

    fn get(&self, seg: u32, fid: i64) -> Option<u32> {
        if (0..DENSE_IDS).contains(&fid) {
            self.dense
                .get(seg as usize)
                .and_then(|d| d.get(fid as usize))
                .copied()
                .filter(|&v| v != ABSENT)
        } else {
            self.sparse.get(&(seg, fid)).copied()
        }
    }
}

/// Each frame's inline levels with their lines.
const FRAME_LINES: &str = "SELECT segment, frame_id, module_id, rel_pc, is_return, context, \
    inline_depth, inlined, function, file, line FROM frame_line";

/// A string-like column as Utf8.
fn utf8(a: &datafusion::arrow::array::ArrayRef) -> Result<datafusion::arrow::array::ArrayRef> {
    Ok(
        datafusion::arrow::compute::cast(a, &datafusion::arrow::datatypes::DataType::Utf8)
            .map_err(datafusion::error::DataFusionError::from)?,
    )
}

/// The numbers `ids` gives a segment column's rows (None: a segment of no
/// selected sample), looked up once per run of the same segment.
fn segments(
    a: &datafusion::arrow::array::ArrayRef,
    ids: &HashMap<String, u32>,
) -> Result<Vec<Option<u32>>> {
    let a = utf8(a)?;
    let a = a.as_string::<i32>();
    let mut out = Vec::with_capacity(a.len());
    let mut last: Option<(&str, Option<u32>)> = None;
    for i in 0..a.len() {
        let v = if a.is_null(i) { "" } else { a.value(i) };
        let id = match last {
            Some((l, id)) if l == v => id,
            _ => ids.get(v).copied(),
        };
        last = Some((v, id));
        out.push(id);
    }
    Ok(out)
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

    /// The samples in order, from memory or from disk.
    pub fn sample_iter(&self) -> Box<dyn Iterator<Item = Result<Sample>> + Send + '_> {
        match &self.spilled {
            Some(sp) => Box::new(
                sp.iter()
                    .map(|r| r.map_err(|e| datafusion::error::DataFusionError::from(e).into())),
            ),
            None => Box::new(self.samples.iter().cloned().map(Ok)),
        }
    }

    /// Number of samples kept apart or summed (in memory or on disk).
    pub fn sample_len(&self) -> u64 {
        self.spilled
            .as_ref()
            .map_or(self.samples.len() as u64, |s| s.len())
    }

    /// Total weight of the samples (in memory).
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
