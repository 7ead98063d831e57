//! Metric points → Arrow batches of `metric`.

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringDictionaryBuilder,
};
use arrow::datatypes::Int32Type;

use super::{MetricSink, Point};
use crate::schema;
use crate::writer::{CaptureWriter, TableWriter};
use crate::Result;

const BATCH_ROWS: usize = 64 * 1024;

type Dict = StringDictionaryBuilder<Int32Type>;

#[derive(Default)]
struct Cols {
    source: Int32Builder,
    line: Int64Builder,
    sample: Int64Builder,
    time: Int64Builder,
    clock: Dict,
    entity: Dict,
    metric: Dict,
    value: Float64Builder,
    since_boot: BooleanBuilder,
    rows: usize,
}

pub struct MetricConverter {
    cols: Cols,
    out: TableWriter,
    source_id: i32,
    pub points: u64,
    /// The first error of a flush inside `point` (reported by `flush`).
    failed: Option<crate::Error>,
}

impl MetricConverter {
    pub fn new(cap: &mut CaptureWriter) -> Result<Self> {
        Ok(MetricConverter {
            cols: Cols::default(),
            out: cap.open_table(&schema::METRIC)?,
            source_id: 0,
            points: 0,
            failed: None,
        })
    }

    pub fn begin_source(&mut self, source_id: i32) {
        self.source_id = source_id;
    }

    pub fn flush(&mut self) -> Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        if self.cols.rows == 0 {
            return Ok(());
        }
        fn a<B: arrow::array::ArrayBuilder>(b: &mut B) -> ArrayRef {
            b.finish()
        }
        let c = &mut self.cols;
        let cols = vec![
            a(&mut c.source),
            a(&mut c.line),
            a(&mut c.sample),
            a(&mut c.time),
            a(&mut c.clock),
            a(&mut c.entity),
            a(&mut c.metric),
            a(&mut c.value),
            a(&mut c.since_boot),
        ];
        c.rows = 0;
        self.out.write_columns(cols)
    }

    pub fn finish(mut self, cap: &mut CaptureWriter) -> Result<()> {
        self.flush()?;
        cap.close_table(self.out)?;
        Ok(())
    }
}

impl MetricSink for MetricConverter {
    fn point(&mut self, p: &Point<'_>) {
        let c = &mut self.cols;
        c.source.append_value(self.source_id);
        c.line.append_value(p.line as i64);
        c.sample.append_value(p.sample);
        c.time.append_option(p.time_ns);
        c.clock.append_value(p.clock);
        c.entity.append_option(p.entity);
        c.metric.append_value(p.metric);
        c.value.append_value(p.value);
        c.since_boot.append_value(p.since_boot);
        c.rows += 1;
        self.points += 1;
        if c.rows >= BATCH_ROWS && self.failed.is_none() {
            if let Err(e) = self.flush() {
                self.failed = Some(e);
            }
        }
    }
}
