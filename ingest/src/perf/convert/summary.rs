//! The tables written once an input is read: events, build-ids (and the
//! modules' build-ids their MMAPs lacked), CPU topology, tracepoint formats,
//! threads, and the header's metadata pairs for `capture_meta`.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::cols::{list_u64, BuildIdCols, CpuCols, EventCols, ThreadCols, TracepointFieldCols};
use crate::error::Result;
use crate::perf::header::{flag, hex, BuildIdEntry, EventDesc, Metadata};
use crate::perf::records::CpuMode;
use crate::writer::CaptureWriter;

/// What is known of a thread at the end: its `perf_thread` row.
#[derive(Default, Clone)]
pub(super) struct ThreadInfo {
    pub(super) ppid: Option<i32>,
    pub(super) comm: Option<Arc<str>>,
    pub(super) start: Option<i64>,
    pub(super) exec: Option<i64>,
    pub(super) end: Option<i64>,
    pub(super) samples: i64,
}

/// `perf_event`: the inputs' events (`names` by event index).
pub(super) fn write_events(
    cap: &mut CaptureWriter,
    events: &[(i32, EventDesc)],
    names: &[Arc<str>],
) -> Result<()> {
    let mut c = EventCols {
        ids: list_u64(),
        ..Default::default()
    };
    for (i, (s, e)) in events.iter().enumerate() {
        let at = &e.attr;
        c.event_id.append_value(i as i32);
        c.source_id.append_value(*s);
        c.name.append_value(names[i].as_ref());
        c.r#type.append_value(at.type_);
        c.config.append_value(at.config);
        c.config1.append_value(at.config1);
        c.config2.append_value(at.config2);
        c.sample_type.append_value(at.sample_type);
        c.read_format.append_value(at.read_format);
        c.sample_period
            .append_option((!at.freq()).then_some(at.sample_period_or_freq));
        c.sample_freq
            .append_option(at.freq().then_some(at.sample_period_or_freq));
        c.branch_sample_type.append_value(at.branch_sample_type);
        c.sample_regs_user.append_value(at.sample_regs_user);
        c.sample_stack_user.append_value(at.sample_stack_user);
        c.flags.append_value(at.flags);
        c.exclude_user
            .append_value(at.flags & flag::EXCLUDE_USER != 0);
        c.exclude_kernel
            .append_value(at.flags & flag::EXCLUDE_KERNEL != 0);
        c.clockid
            .append_option((at.flags & flag::USE_CLOCKID != 0).then_some(at.clockid));
        c.ids.values().append_slice(&e.ids);
        c.ids.append(true);
    }
    cap.write_table(&mut c)?;
    Ok(())
}

/// `perf_build_id`; returns the build-id of each path the headers name
/// (the kernel's as `[kernel.kallsyms]`), for modules whose MMAP had none.
/// The module path a recorded build-id is for (the kernel's entries name
/// `[kernel.kallsyms]` and more).
fn module_path(e: &BuildIdEntry) -> &str {
    if CpuMode::from_misc(e.misc).is_kernel() && e.path.starts_with("[kernel.kallsyms]") {
        "[kernel.kallsyms]"
    } else {
        e.path.as_str()
    }
}

/// The build-ids an input's header records, by module path.
pub(super) fn recorded_build_ids(m: &Metadata) -> impl Iterator<Item = (&str, String)> {
    m.build_ids
        .iter()
        .map(|e| (module_path(e), hex(&e.build_id)))
}

pub(super) fn write_build_ids<'a>(
    cap: &mut CaptureWriter,
    metas: &'a [(i32, Metadata)],
) -> Result<HashMap<&'a str, String>> {
    let mut bid_by_path: HashMap<&str, String> = HashMap::default();
    let mut c = BuildIdCols::default();
    for (s, m) in metas {
        for e in &m.build_ids {
            c.source_id.append_value(*s);
            c.pid.append_value(e.pid);
            c.path.append_value(&e.path);
            let h = hex(&e.build_id);
            c.build_id.append_value(&h);
            c.cpu_mode.append_value(CpuMode::from_misc(e.misc).as_str());
            bid_by_path.entry(module_path(e)).or_insert(h);
        }
    }
    cap.write_table(&mut c)?;
    Ok(bid_by_path)
}

/// `perf_cpu`: the CPU topology of each input.
pub(super) fn write_cpus(cap: &mut CaptureWriter, metas: &[(i32, Metadata)]) -> Result<()> {
    let mut c = CpuCols::default();
    for (s, m) in metas {
        for t in &m.cpus {
            c.source_id.append_value(*s);
            c.cpu.append_value(t.cpu as i32);
            c.core_id.append_value(t.core_id);
            c.die_id.append_option(t.die_id);
            c.socket_id.append_value(t.socket_id);
        }
    }
    cap.write_table(&mut c)?;
    Ok(())
}

/// `tracepoint_field`: the fields of each input's tracepoint formats.
pub(super) fn write_tracepoint_fields(
    cap: &mut CaptureWriter,
    metas: &[(i32, Metadata)],
) -> Result<()> {
    let mut c = TracepointFieldCols::default();
    for (s, m) in metas {
        for f in &m.tracepoint_formats {
            for (i, x) in f.fields.iter().enumerate() {
                c.source_id.append_value(*s);
                c.tracepoint_id.append_value(f.id);
                c.event.append_value(&f.event);
                c.position.append_value(i as i32);
                c.field.append_value(&x.name);
                c.declaration.append_value(&x.declaration);
                c.offset.append_value(i32::from(x.offset));
                c.size.append_value(i32::from(x.size));
                c.signed.append_option(x.signed);
                c.common.append_value(x.common);
                c.decode.append_value(&x.decode);
                c.big_endian.append_value(f.big_endian);
            }
        }
    }
    cap.write_table(&mut c)?;
    Ok(())
}

/// `perf_thread`: one row per (input, pid, tid), in that order.
pub(super) fn write_threads(
    cap: &mut CaptureWriter,
    threads: &HashMap<(i32, i32, i32), ThreadInfo>,
) -> Result<()> {
    let mut rows: Vec<_> = threads.iter().collect();
    rows.sort_by_key(|(k, _)| **k);
    let mut c = ThreadCols::default();
    for ((s, p, t), th) in rows {
        c.source_id.append_value(*s);
        c.pid.append_value(*p);
        c.tid.append_value(*t);
        c.ppid.append_option(th.ppid);
        c.comm.append_option(th.comm.as_deref());
        c.start_ns.append_option(th.start);
        c.exec_ns.append_option(th.exec);
        c.end_ns.append_option(th.end);
        c.samples.append_value(th.samples);
    }
    cap.write_table(&mut c)?;
    Ok(())
}

/// Each input's header pairs and feature list, for `capture_meta`.
pub(super) fn meta_pairs(metas: &[(i32, Metadata)]) -> Vec<(i32, String, String)> {
    let mut pairs = Vec::new();
    for (s, m) in metas {
        for (k, v) in &m.pairs {
            pairs.push((*s, k.clone(), v.clone()));
        }
        pairs.push((*s, "features".into(), m.feature_names()));
    }
    pairs
}
