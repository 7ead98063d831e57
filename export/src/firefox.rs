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
//!   of its own (the innermost last), in category `User` or `Kernel`.
//!   Source lines are not in the file: the crate writes function names
//!   only (the Profiler gets lines from a symbol server, which a file
//!   opened on its own does not have).

use std::collections::HashMap;

use anyhow::bail;
use fxprof_processed_profile::{
    CategoryColor, CategoryPairHandle, CpuDelta, Frame, FrameFlags, FrameInfo, Profile,
    ReferenceTimestamp, SamplingInterval, StackHandle, ThreadHandle, Timestamp,
};
use trawl_query::profile::StackProfile;

/// The profile in the Firefox Profiler's processed format (JSON).
/// `interval_ns` is the sampling interval the Profiler assumes between
/// samples (its CPU graph and durations).
pub fn write(p: &StackProfile, product: &str, interval_ns: u64) -> anyhow::Result<Vec<u8>> {
    let cpu_from_period = match p.weight.as_deref() {
        None => false,
        Some("period") => crate::is_time_event(&p.event),
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
    let mut start: HashMap<u32, i64> = HashMap::new();
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
    let mut procs: HashMap<(u32, i32), fxprof_processed_profile::ProcessHandle> = HashMap::new();
    let mut threads: HashMap<(u32, i32, i32), ThreadHandle> = HashMap::new();
    let several = p.captures.len() > 1;
    for s in &p.samples {
        let comm = p.str(s.comm);
        let t = at(s.capture, s.time_ns);
        let proc = *procs.entry((s.capture, s.pid)).or_insert_with(|| {
            let name = if several {
                format!("{comm} ({})", p.captures[s.capture as usize])
            } else {
                comm.to_string()
            };
            prof.add_process(&name, s.pid.max(0) as u32, t)
        });
        if s.pid == s.tid {
            prof.set_process_name(proc, comm);
        }
        threads.entry((s.capture, s.pid, s.tid)).or_insert_with(|| {
            let th = prof.add_thread(proc, s.tid.max(0) as u32, t, s.pid == s.tid);
            prof.set_thread_name(th, comm);
            th
        });
    }
    // Samples, each stack interned once per thread.
    let mut stacks: HashMap<(ThreadHandle, u32), Option<StackHandle>> = HashMap::new();
    let mut last: HashMap<ThreadHandle, Timestamp> = HashMap::new();
    for s in &p.samples {
        let th = threads[&(s.capture, s.pid, s.tid)];
        let stack = match s.stack {
            None => None,
            Some(k) => *stacks.entry((th, k)).or_insert_with(|| {
                let mut frames = Vec::new();
                for &l in p.stacks[k as usize].iter().rev() {
                    let loc = &p.locations[l as usize];
                    let cat = if loc.kernel { kernel } else { user };
                    for line in loc.lines.iter().rev() {
                        frames.push(FrameInfo {
                            frame: Frame::Label(prof.intern_string(p.str(line.function))),
                            category_pair: cat,
                            flags: FrameFlags::empty(),
                        });
                    }
                }
                prof.intern_stack_frames(th, frames.into_iter())
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
    Ok(serde_json::to_vec(&prof)?)
}
