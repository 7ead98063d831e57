//! perf's power PMU events (`power/energy-cores/`, …) read in sample
//! groups, turned into energy readings of the RAPL domains.

use super::*;

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

impl PerfConverter {
    /// The power event values read at this input's samples as energy
    /// readings in time order, with where each sample is (the read's rank
    /// stands for the line). Each
    /// group's power event is its own counter (perf opens one per group,
    /// counting from when it was enabled): its zone is
    /// `power/energy-cores/@LEADER`, LEADER the group's sampling event, so
    /// each delta is the energy since the previous sample of that event
    /// (Ono et al. 2015, sampling-based power measurement, §3.4). The RAPL
    /// MSRs are package-wide: reads from any CPU of a package continue its
    /// counter; with several packages in the topology each read is placed
    /// on the package of the CPU that read it (one counter per package).
    pub fn take_power_readings(&mut self) -> Vec<(crate::energy::Reading, crate::diag::Position)> {
        let mut reads = std::mem::take(&mut self.power_reads);
        reads.sort_by_key(|r| r.0);
        // The package of the CPU that read (HEADER_CPU_TOPOLOGY); with one
        // package (or no topology) the package is not named.
        let topo: &[crate::perf::header::CpuTopology] = match self.metas.last() {
            Some((s, m)) if *s == self.source_id => &m.cpus,
            _ => &[],
        };
        let sockets: std::collections::BTreeSet<i32> = topo
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
                let r = crate::energy::Reading {
                    line: i as u64 + 1,
                    time_ns: t as i64,
                    package: package(cpu),
                    domain: self.power_domain[e as usize]?,
                    zone: format!(
                        "{}@{}",
                        self.event_names[e as usize], self.event_names[lead as usize]
                    ),
                    value: crate::energy::Value::Cumulative {
                        uj: v as f64 * POWER_EVENT_JOULES * 1e6,
                        max: None,
                        from_zero: true,
                    },
                };
                Some((r, at))
            })
            .collect()
    }
}
