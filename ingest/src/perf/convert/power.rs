//! perf's power PMU events (`power/energy-cores/`, …) read in sample
//! groups, turned into energy readings of the RAPL domains.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::diag::Position;
use crate::energy::{Reading, Value};
use crate::perf::header::CpuTopology;

/// The RAPL domain of a perf power event (`power/energy-cores/`).
pub(super) fn power_domain(event: &str) -> Option<&'static str> {
    event
        .starts_with("power/energy-")
        .then(|| crate::energy::domain_of_name(event))
        .flatten()
}

/// Joules per count of the perf power PMU's energy events (its sysfs
/// `scale`, 2.3283064365386962890625e-10: 2^-32 J).
const POWER_EVENT_JOULES: f64 = 1.0 / 4294967296.0;

/// One power event value read at a sample: (time, event, the group's
/// sampling event, value, CPU, where the sample is).
pub(super) type PowerRead = (u64, i32, i32, u64, Option<u32>, Position);

/// Power event values read at an input's samples as energy readings in
/// time order, with where each sample is (the read's rank stands for the
/// line); `domains` and `names` are by event index, `topo` is the input's
/// CPU topology. Each group's power event is its own counter (perf opens
/// one per group, counting from when it was enabled): its zone is
/// `power/energy-cores/@LEADER`, LEADER the group's sampling event, so
/// each delta is the energy since the previous sample of that event
/// (Ono et al. 2015, sampling-based power measurement, §3.4). The RAPL
/// MSRs are package-wide: reads from any CPU of a package continue its
/// counter; with several packages in the topology each read is placed on
/// the package of the CPU that read it (one counter per package).
pub(super) fn readings(
    mut reads: Vec<PowerRead>,
    topo: &[CpuTopology],
    domains: &[Option<&'static str>],
    names: &[Arc<str>],
) -> Vec<(Reading, Position)> {
    reads.sort_by_key(|r| r.0);
    // The package of the CPU that read (HEADER_CPU_TOPOLOGY); with one
    // package (or no topology) the package is not named.
    let sockets: BTreeSet<i32> = topo
        .iter()
        .map(|t| t.socket_id)
        .filter(|&s| s >= 0)
        .collect();
    let package = |cpu: Option<u32>| -> Option<i32> {
        if sockets.len() < 2 {
            return None;
        }
        let t = topo.get(cpu? as usize)?;
        (t.socket_id >= 0).then_some(t.socket_id)
    };
    reads
        .into_iter()
        .enumerate()
        .filter_map(|(i, (t, e, lead, v, cpu, at))| {
            let r = Reading {
                line: i as u64 + 1,
                time_ns: t as i64,
                package: package(cpu),
                domain: domains[e as usize]?,
                zone: format!("{}@{}", names[e as usize], names[lead as usize]),
                value: Value::Cumulative {
                    uj: v as f64 * POWER_EVENT_JOULES * 1e6,
                    max: None,
                    from_zero: true,
                },
            };
            Some((r, at))
        })
        .collect()
}
