//! Energy readings → Arrow batches of `energy`: the energy of each
//! interval between consecutive readings of a counter, wrap-arounds
//! undone, readings out of order and counters that went back reported.

use std::collections::HashMap;

use arrow::array::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    StringDictionaryBuilder,
};
use arrow::datatypes::Int32Type;

use super::{Reading, ReadingSink, Value};
use crate::columns::{TableColumns, UtcTime};
use crate::error::Result;
use crate::writer::{CaptureWriter, TableWriter};
use trawl_capture::schema;

table_columns! {
    #[derive(Default)]
    struct Cols for schema::ENERGY {
        source_id: Int32Builder,
        line: Int64Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        package: Int32Builder,
        domain: StringDictionaryBuilder<Int32Type>,
        zone: StringBuilder,
        energy_uj: Float64Builder,
        delta_uj: Float64Builder,
        interval_ns: Int64Builder,
        wrapped: BooleanBuilder,
    }
}

/// A problem found while turning readings into intervals: (line, kind,
/// message).
pub type Problem = (u64, &'static str, String);

pub struct EnergyConverter {
    cols: Cols,
    out: TableWriter,
    source_id: i32,
    /// Per counter (package, domain, zone): the last reading's time and
    /// cumulative value.
    last: HashMap<(Option<i32>, &'static str, String), (i64, f64)>,
    pub problems: Vec<Problem>,
    pub readings: u64,
    /// The current input's offset from its clock to UTC, when known.
    utc_offset: Option<i64>,
}

impl EnergyConverter {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(EnergyConverter {
            cols: Cols::default(),
            out: cap.open_table(&schema::ENERGY)?,
            source_id: 0,
            last: HashMap::new(),
            problems: Vec::new(),
            readings: 0,
            utc_offset: None,
        })
    }

    /// Places the current input's clock on UTC (`Some(0)`: its times are
    /// ns since the epoch).
    pub fn set_utc_offset(&mut self, off: Option<i64>) {
        self.utc_offset = off;
    }

    pub fn begin_source(&mut self, source_id: i32) {
        self.source_id = source_id;
        self.last.clear();
        self.problems.clear();
        self.utc_offset = None;
    }

    fn row(
        &mut self,
        r: &Reading,
        energy: Option<f64>,
        delta: Option<f64>,
        interval: Option<i64>,
        wrapped: bool,
    ) {
        let c = &mut self.cols;
        c.source_id.append_value(self.source_id);
        c.line.append_value(r.line as i64);
        c.time_ns.append_value(r.time_ns);
        c.time_utc
            .push(self.utc_offset.and_then(|o| r.time_ns.checked_add(o)));
        c.package.append_option(r.package);
        c.domain.append_value(r.domain);
        c.zone.append_value(&r.zone);
        c.energy_uj.append_option(energy);
        c.delta_uj.append_option(delta);
        c.interval_ns.append_option(interval);
        c.wrapped.append_value(wrapped);
        self.readings += 1;
    }

    /// Writes the rows gathered so far.
    pub fn flush(&mut self) -> Result<()> {
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

impl EnergyConverter {
    /// A reading not after its counter's previous one (at `t0`) is
    /// reported and skipped.
    fn out_of_order(&mut self, r: &Reading, t0: i64) -> bool {
        if r.time_ns > t0 {
            return false;
        }
        self.problems.push((
            r.line,
            "out_of_order",
            format!(
                "{} reading at {} ns is not after the previous one ({t0} ns): skipped",
                r.zone, r.time_ns
            ),
        ));
        true
    }
}

impl ReadingSink for EnergyConverter {
    fn reading(&mut self, r: Reading) {
        let key = (r.package, r.domain, r.zone.clone());
        match r.value {
            Value::Delta { uj, interval_ns } => {
                let (t0, sum) = self.last.get(&key).copied().unwrap_or((i64::MIN, 0.0));
                if self.out_of_order(&r, t0) {
                    return;
                }
                self.last.insert(key, (r.time_ns, sum + uj));
                self.row(&r, Some(sum + uj), Some(uj), interval_ns, false);
            }
            Value::Cumulative { uj, max, from_zero } => {
                let Some(&(t0, prev)) = self.last.get(&key) else {
                    // The first reading of a counter starts its intervals;
                    // one that counted from the start holds the energy
                    // since then (an interval of unknown length).
                    self.last.insert(key, (r.time_ns, uj));
                    self.row(&r, Some(uj), from_zero.then_some(uj), None, false);
                    return;
                };
                if self.out_of_order(&r, t0) {
                    return;
                }
                self.last.insert(key, (r.time_ns, uj));
                let interval = Some(r.time_ns - t0);
                if uj >= prev {
                    self.row(&r, Some(uj), Some(uj - prev), interval, false);
                } else if let Some(m) = max {
                    // The counter wrapped at max_energy_range_uj.
                    self.row(&r, Some(uj), Some(uj + m - prev), interval, true);
                } else {
                    self.problems.push((
                        r.line,
                        "counter_wrap",
                        format!(
                            "{} went back from {prev} to {uj} µJ and its max_energy_range_uj is unknown: the interval's energy is left null",
                            r.zone
                        ),
                    ));
                    self.row(&r, Some(uj), None, interval, true);
                }
            }
        }
    }
}
