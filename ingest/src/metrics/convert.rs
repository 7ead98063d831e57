//! Metric points → Arrow batches of `metric`.

use arrow::array::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringDictionaryBuilder,
};
use arrow::datatypes::Int32Type;

use super::{MetricSink, Point};
use crate::columns::{TableColumns, UtcTime};
use crate::error::Result;
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema;

const BATCH_ROWS: usize = 64 * 1024;

type Dict = StringDictionaryBuilder<Int32Type>;

table_columns! {
    #[derive(Default)]
    struct Cols for schema::METRIC {
        source_id: Int32Builder,
        line: Int64Builder,
        sample: Int64Builder,
        time_ns: Int64Builder,
        clock: Dict,
        utc_ns: Int64Builder,
        time_utc: UtcTime,
        entity: Dict,
        metric: Dict,
        value: Float64Builder,
        since_boot: BooleanBuilder,
    }
}

pub struct MetricConverter {
    cols: Cols,
    out: TableWriter,
    source_id: i32,
    pub points: u64,
    /// The first error of a flush inside `point` (reported by `flush`).
    failed: Option<crate::error::Error>,
    /// Zone of local times (`--tz`).
    tz: Option<chrono_tz::Tz>,
    /// What the current source's times are; see [`SourceClock`].
    pub clock: SourceClock,
}

/// How the current source's times relate to UTC.
#[derive(Clone, Debug, Default)]
pub struct SourceClock {
    /// The clock of its first timed row (`utc`, `local:CEST`, ...).
    pub clock: Option<String>,
    /// Rows with local times left without `utc_ns` (no `--tz`).
    pub unplaced: u64,
    /// Local times that do not exist in the zone (skipped by a daylight
    /// saving change): (line, text).
    pub nonexistent: Vec<(u64, String)>,
    /// Ambiguous local times resolved (end of daylight saving).
    pub ambiguous: u64,
    /// The last UTC time, for resolving ambiguous local times.
    last_utc: Option<i64>,
}

impl MetricConverter {
    pub fn new(cap: &mut CaptureWriter, tz: Option<chrono_tz::Tz>) -> Result<Self> {
        Ok(MetricConverter {
            cols: Cols::default(),
            out: cap.open_table(&schema::METRIC)?,
            source_id: 0,
            points: 0,
            failed: None,
            tz,
            clock: SourceClock::default(),
        })
    }

    pub fn begin_source(&mut self, source_id: i32) {
        self.source_id = source_id;
        self.clock = SourceClock::default();
    }

    /// The UTC time of `p`, if its clock can be placed on UTC.
    fn utc(&mut self, p: &Point<'_>) -> Option<i64> {
        let t = p.time_ns?;
        if self.clock.clock.is_none() {
            self.clock.clock = Some(p.clock.to_string());
        }
        if p.clock == "utc" {
            self.clock.last_utc = Some(t);
            return Some(t);
        }
        if !p.clock.starts_with("local") {
            return None;
        }
        let Some(tz) = self.tz else {
            self.clock.unplaced += 1;
            return None;
        };
        let abbrev = p.clock.strip_prefix("local:");
        match local_to_utc(tz, t, abbrev, self.clock.last_utc) {
            Local::One(u) => {
                self.clock.last_utc = Some(u);
                Some(u)
            }
            Local::Ambiguous(u) => {
                self.clock.ambiguous += 1;
                self.clock.last_utc = Some(u);
                Some(u)
            }
            Local::Missing => {
                if self.clock.nonexistent.len() < 100 {
                    let text = chrono::DateTime::from_timestamp_nanos(t)
                        .naive_utc()
                        .to_string();
                    self.clock.nonexistent.push((p.line, text));
                }
                None
            }
        }
    }

    pub fn flush(&mut self) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.cols.rows() == 0 {
            return Ok(());
        }
        self.out.write_rows(&mut self.cols)
    }

    pub fn finish(mut self, cap: &mut CaptureWriter) -> Result<()> {
        self.flush()?;
        cap.close_table(self.out)?;
        Ok(())
    }
}

impl MetricSink for MetricConverter {
    fn point(&mut self, p: &Point<'_>) {
        let utc = self.utc(p);
        let c = &mut self.cols;
        c.source_id.append_value(self.source_id);
        c.line.append_value(p.line as i64);
        c.sample.append_value(p.sample);
        c.time_ns.append_option(p.time_ns);
        c.clock.append_value(p.clock);
        c.utc_ns.append_option(utc);
        c.time_utc.push(utc);
        c.entity.append_option(p.entity);
        c.metric.append_value(p.metric);
        c.value.append_value(p.value);
        c.since_boot.append_value(p.since_boot);
        self.points += 1;
        if c.rows() >= BATCH_ROWS && self.failed.is_none() {
            if let Err(e) = self.flush() {
                self.failed = Some(e);
            }
        }
    }
}

enum Local {
    One(i64),
    /// One of two candidates (the end of daylight saving).
    Ambiguous(i64),
    /// The time does not exist in the zone.
    Missing,
}

/// Converts a wall-clock time of `tz` (ns, read as if UTC) to UTC. Of two
/// candidates it takes the first not before `last` (the previous row of the
/// source), so a clock that repeats an hour keeps going forward; for the
/// first row, the one whose zone abbreviation is `abbrev` (vmstat prints
/// it), else the earlier.
fn local_to_utc(tz: chrono_tz::Tz, t: i64, abbrev: Option<&str>, last: Option<i64>) -> Local {
    use chrono::{Offset, TimeZone};
    use chrono_tz::OffsetName;
    let naive = chrono::DateTime::from_timestamp_nanos(t).naive_utc();
    let to_ns = |d: chrono::DateTime<chrono_tz::Tz>| {
        t - i64::from(d.offset().fix().local_minus_utc()) * 1_000_000_000
    };
    match tz.from_local_datetime(&naive) {
        chrono::LocalResult::Single(d) => Local::One(to_ns(d)),
        chrono::LocalResult::Ambiguous(a, b) => {
            let (ua, ub) = (to_ns(a).min(to_ns(b)), to_ns(a).max(to_ns(b)));
            let pick = match last {
                Some(l) if ua >= l => ua,
                Some(_) => ub,
                None => match abbrev {
                    Some(z) if b.offset().abbreviation() == Some(z) => to_ns(b),
                    Some(z) if a.offset().abbreviation() == Some(z) => to_ns(a),
                    _ => ua,
                },
            };
            Local::Ambiguous(pick)
        }
        chrono::LocalResult::None => Local::Missing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(s: &str) -> i64 {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
            .unwrap()
            .and_utc()
            .timestamp_nanos_opt()
            .unwrap()
    }

    #[test]
    fn local_times_of_a_zone_become_utc_across_the_end_of_dst() {
        let tz: chrono_tz::Tz = "Europe/Berlin".parse().unwrap();
        // Expected values: `TZ=Europe/Berlin date -d '2026-10-25 02:30:00 CEST' +%s` etc.
        let Local::One(u) = local_to_utc(tz, ns("2026-07-01 12:00:00"), None, None) else {
            panic!()
        };
        assert_eq!(u, ns("2026-07-01 10:00:00"));
        // 02:59:59 CEST (first row, vmstat printed CEST) = 00:59:59 UTC.
        let Local::Ambiguous(a) = local_to_utc(tz, ns("2026-10-25 02:59:59"), Some("CEST"), None)
        else {
            panic!()
        };
        assert_eq!(a, ns("2026-10-25 00:59:59"));
        // The next second reads 02:00:00 again: CET = 01:00:00 UTC.
        let Local::Ambiguous(b) =
            local_to_utc(tz, ns("2026-10-25 02:00:00"), Some("CEST"), Some(a))
        else {
            panic!()
        };
        assert_eq!(b, ns("2026-10-25 01:00:00"));
        // 02:30 on the spring-forward day does not exist.
        assert!(matches!(
            local_to_utc(tz, ns("2026-03-29 02:30:00"), None, None),
            Local::Missing
        ));
    }
}
