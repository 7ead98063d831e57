//! What a profile's weights and times mean to a viewer: the unit of the
//! weight, the sampling interval it assumes.

/// Events whose period is a time in nanoseconds (perf's software clocks),
/// with or without modifiers (`cpu-clock:ppp`, perf's default event on a
/// virtual machine; `task-clock:u`; `cpu-clock/period=1000000/`).
pub(crate) fn is_time_event(event: &str) -> bool {
    let base = event.split([':', '/']).next().unwrap_or(event);
    matches!(base, "cpu-clock" | "task-clock") || event.ends_with(":cpu-clock")
}

/// The unit of the profile's weight: `nanoseconds` for the period of a
/// clock event, else `count`.
pub(crate) fn weight_unit(p: &trawl_query::profile::StackProfile) -> &'static str {
    match p.weight.as_deref() {
        Some("period") if is_time_event(&p.event) => "nanoseconds",
        _ => "count",
    }
}

/// The median gap between consecutive samples of a thread (the sampling
/// interval a viewer assumes), when samples carry times.
pub(crate) fn median_gap(p: &trawl_query::profile::StackProfile) -> Option<u64> {
    let mut last: rustc_hash::FxHashMap<(u32, i32), i64> = Default::default();
    let mut gaps: Vec<u64> = Vec::new();
    for s in &p.samples {
        let Some(t) = s.time_ns else { continue };
        if let Some(prev) = last.insert((s.capture, s.tid), t) {
            if t > prev {
                gaps.push((t - prev) as u64);
            }
        }
    }
    if gaps.is_empty() {
        return None;
    }
    let mid = gaps.len() / 2;
    Some(*gaps.select_nth_unstable(mid).1)
}

#[cfg(test)]
mod tests {
    use super::is_time_event;

    #[test]
    fn clocks_with_modifiers_are_clocks() {
        for e in [
            "cpu-clock",
            "cpu-clock:ppp",
            "task-clock:u",
            "cpu-clock/period=1000000/",
        ] {
            assert!(is_time_event(e), "{e}");
        }
        for e in [
            "cycles",
            "cycles:ppp",
            "power/energy-cores/",
            "sched:sched_switch",
        ] {
            assert!(!is_time_event(e), "{e}");
        }
    }
}
