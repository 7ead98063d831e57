//! Writing query results: aligned text table, CSV, JSON or Parquet.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use trawl_ingest::arrow::record_batch::RecordBatch;

#[derive(Clone, Copy, Debug, Default, ValueEnum)]
pub enum Format {
    #[default]
    Table,
    Csv,
    Json,
    Parquet,
}

#[derive(Args, Clone, Debug, Default)]
pub struct OutputOpts {
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Write to FILE instead of standard output (required for parquet).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.to_string().contains("Broken pipe")
    })
}

/// Dictionary columns are cast to plain strings for text output.
fn plain(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    use trawl_ingest::arrow::compute::cast;
    use trawl_ingest::arrow::datatypes::{DataType, Field, Schema};
    let mut out = Vec::new();
    for b in batches {
        let mut cols = Vec::new();
        let mut fields = Vec::new();
        for (f, c) in b.schema().fields().iter().zip(b.columns()) {
            if let DataType::Dictionary(_, v) = f.data_type() {
                cols.push(cast(c, v)?);
                fields.push(Field::new(f.name(), v.as_ref().clone(), f.is_nullable()));
            } else {
                cols.push(c.clone());
                fields.push(f.as_ref().clone());
            }
        }
        out.push(RecordBatch::try_new(
            std::sync::Arc::new(Schema::new(fields)),
            cols,
        )?);
    }
    Ok(out)
}

/// The rows of `df`, with an empty batch of its schema when it has none:
/// CSV still gets its header, Parquet its schema.
pub async fn rows_of(df: trawl_query::datafusion::prelude::DataFrame) -> Result<Vec<RecordBatch>> {
    let schema = std::sync::Arc::new(df.schema().as_arrow().clone());
    let mut batches = df.collect().await?;
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(schema));
    }
    Ok(batches)
}

pub fn write(batches: &[RecordBatch], o: &OutputOpts) -> Result<()> {
    let batches = plain(batches)?;
    match o.format {
        Format::Parquet => {
            let Some(path) = &o.output else {
                bail!("--format parquet needs -o FILE");
            };
            let Some(first) = batches.first() else {
                bail!("the query returned no batches");
            };
            let tmp = path.with_extension("parquet.trawl-tmp");
            let f = std::fs::File::create(&tmp)
                .with_context(|| format!("creating {}", tmp.display()))?;
            let mut w =
                trawl_ingest::parquet::arrow::ArrowWriter::try_new(f, first.schema(), None)?;
            for b in &batches {
                w.write(b)?;
            }
            w.close()?;
            std::fs::rename(&tmp, path)?;
            Ok(())
        }
        _ => {
            // Streamed to standard output, or to a temporary file renamed
            // over FILE at the end (an interrupted run leaves no half file).
            let tmp = o.output.as_deref().map(tmp_path);
            let written = (|| -> Result<()> {
                let mut sink: Box<dyn Write> = match &tmp {
                    Some(t) => Box::new(std::io::BufWriter::new(
                        std::fs::File::create(t)
                            .with_context(|| format!("creating {}", t.display()))?,
                    )),
                    None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
                };
                match o.format {
                    Format::Table if batches.iter().any(|b| b.num_rows() > 0) => {
                        write_table(&batches, &mut sink)?;
                    }
                    Format::Table => {
                        let t = trawl_ingest::arrow::util::pretty::pretty_format_batches(&batches)?;
                        writeln!(sink, "{t}")?;
                    }
                    Format::Csv => {
                        let mut w = trawl_ingest::arrow::csv::WriterBuilder::new()
                            .with_header(true)
                            .build(&mut sink);
                        for b in &batches {
                            w.write(b)?;
                        }
                    }
                    Format::Json if batches.iter().all(|b| b.num_rows() == 0) => {
                        sink.write_all(b"[]\n")?;
                    }
                    Format::Json => {
                        let mut w = trawl_ingest::arrow::json::ArrayWriter::new(&mut sink);
                        for b in &batches {
                            w.write(b)?;
                        }
                        w.finish()?;
                        sink.write_all(b"\n")?;
                    }
                    Format::Parquet => unreachable!(),
                }
                sink.flush()?;
                Ok(())
            })();
            if let Some(t) = &tmp {
                if written.is_err() {
                    let _ = std::fs::remove_file(t);
                }
            }
            written?;
            if let (Some(t), Some(p)) = (&tmp, &o.output) {
                std::fs::rename(t, p).with_context(|| format!("renaming to {}", p.display()))?;
            }
            Ok(())
        }
    }
}

/// Cells wider than this many columns do not widen their column: they
/// overflow it, shifting the rest of their row. A report of 200 K
/// functions with a few 400-character C++ names was otherwise padded to
/// 125 MB, most of it spaces (perf report pads its columns to the widest
/// cell too, but prints the symbol, its only long column, last).
const MAX_PADDED_WIDTH: usize = 100;

/// The aligned table arrow's `pretty_format_batches` prints (`+---+`
/// borders, cells left-aligned, nulls empty), written cell by cell: the
/// cells are measured once and written once, instead of holding every row
/// as a table of strings (a report of 170 K rows took 1.4 s and 400 MB
/// that way); string cells are measured and written as they are, others
/// formatted by arrow. A column is as wide as its widest cell up to
/// [`MAX_PADDED_WIDTH`]; wider cells overflow it.
fn write_table(batches: &[RecordBatch], sink: &mut dyn Write) -> Result<()> {
    use trawl_ingest::arrow::array::{Array, AsArray};
    use trawl_ingest::arrow::datatypes::{DataType, Int32Type, Int64Type, UInt32Type, UInt64Type};
    use trawl_ingest::arrow::util::display::{ArrayFormatter, FormatOptions};
    use unicode_width::UnicodeWidthStr;

    /// A column's cells: strings as they are, integers through `itoa`,
    /// the rest through arrow.
    enum Cells<'a> {
        Utf8(&'a dyn Array, fn(&dyn Array, usize) -> &str),
        /// Integers: written and measured without arrow's formatter.
        Int(&'a dyn Array, fn(&dyn Array, usize) -> i128),
        Other(ArrayFormatter<'a>),
    }
    fn int<T: trawl_ingest::arrow::datatypes::ArrowPrimitiveType>(a: &dyn Array, i: usize) -> i128
    where
        T::Native: Into<i128>,
    {
        a.as_primitive::<T>().value(i).into()
    }
    /// Columns a cell takes: its length when it is printable ASCII (most
    /// cells: the Unicode measure is several times slower).
    fn text_width(s: &str) -> usize {
        if s.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            s.len()
        } else {
            s.width()
        }
    }
    /// Decimal digits of `v`, with its sign.
    fn int_width(v: i128) -> usize {
        let mut n = v.unsigned_abs();
        let mut w = usize::from(v < 0) + 1;
        while n >= 10 {
            n /= 10;
            w += 1;
        }
        w
    }
    fn utf8(a: &dyn Array, i: usize) -> &str {
        a.as_string::<i32>().value(i)
    }
    fn large_utf8(a: &dyn Array, i: usize) -> &str {
        a.as_string::<i64>().value(i)
    }
    fn utf8_view(a: &dyn Array, i: usize) -> &str {
        a.as_string_view().value(i)
    }
    impl Cells<'_> {
        /// Columns cell `r` takes (integers without writing them).
        fn width(&self, r: usize, buf: &mut String) -> Result<usize> {
            Ok(match self {
                Cells::Int(a, _) if a.is_null(r) => 0,
                Cells::Int(a, value) => int_width(value(*a, r)),
                _ => text_width(self.text(r, buf)?),
            })
        }
        /// Writes cell `r` into `buf` (cleared first) unless it is a
        /// string, which is returned as it is.
        fn text<'b>(&'b self, r: usize, buf: &'b mut String) -> Result<&'b str> {
            match self {
                Cells::Utf8(a, _) if a.is_null(r) => Ok(""),
                Cells::Utf8(a, value) => Ok(value(*a, r)),
                Cells::Int(a, _) if a.is_null(r) => Ok(""),
                Cells::Int(a, value) => {
                    buf.clear();
                    buf.push_str(itoa::Buffer::new().format(value(*a, r)));
                    Ok(buf.as_str())
                }
                Cells::Other(f) => {
                    buf.clear();
                    std::fmt::Write::write_fmt(buf, format_args!("{}", f.value(r)))?;
                    Ok(buf.as_str())
                }
            }
        }
    }
    let opts = FormatOptions::default().with_display_error(true);
    fn cells<'a>(b: &'a RecordBatch, opts: &'a FormatOptions) -> Result<Vec<Cells<'a>>> {
        b.columns()
            .iter()
            .map(|col| {
                let a = col.as_ref();
                Ok(match a.data_type() {
                    DataType::Utf8 => Cells::Utf8(a, utf8),
                    DataType::LargeUtf8 => Cells::Utf8(a, large_utf8),
                    DataType::Utf8View => Cells::Utf8(a, utf8_view),
                    DataType::Int64 => Cells::Int(a, int::<Int64Type>),
                    DataType::Int32 => Cells::Int(a, int::<Int32Type>),
                    DataType::UInt64 => Cells::Int(a, int::<UInt64Type>),
                    DataType::UInt32 => Cells::Int(a, int::<UInt32Type>),
                    _ => Cells::Other(ArrayFormatter::try_new(a, opts)?),
                })
            })
            .collect()
    }

    let schema = batches[0].schema();
    let mut width: Vec<usize> = schema
        .fields()
        .iter()
        .map(|f| text_width(f.name()))
        .collect();
    // Batches are measured, then written, on every core (a report of
    // hundreds of thousands of rows is tens of megabytes of text).
    use rayon::prelude::*;
    let widths = batches
        .par_iter()
        .map(|b| {
            let mut width = vec![0; b.num_columns()];
            let mut buf = String::new();
            for (c, col) in cells(b, &opts)?.iter().enumerate() {
                for r in 0..b.num_rows() {
                    let w = col.width(r, &mut buf)?;
                    if w <= MAX_PADDED_WIDTH && w > width[c] {
                        width[c] = w;
                    }
                }
            }
            Ok(width)
        })
        .collect::<Result<Vec<Vec<usize>>>>()?;
    for bw in widths {
        for (w, b) in width.iter_mut().zip(bw) {
            *w = (*w).max(b);
        }
    }
    let mut rule = String::from("+");
    for w in &width {
        rule.push_str(&"-".repeat(w + 2));
        rule.push('+');
    }
    rule.push('\n');
    let cell = |out: &mut Vec<u8>, w: usize, text: &str| {
        out.push(b' ');
        out.extend_from_slice(text.as_bytes());
        out.extend(std::iter::repeat_n(
            b' ',
            w.saturating_sub(text_width(text)) + 1,
        ));
        out.push(b'|');
    };
    let mut out: Vec<u8> = Vec::new();
    let out = &mut out;
    out.extend_from_slice(rule.as_bytes());
    out.push(b'|');
    for (f, w) in schema.fields().iter().zip(&width) {
        cell(out, *w, f.name());
    }
    out.push(b'\n');
    out.extend_from_slice(rule.as_bytes());
    sink.write_all(out)?;
    // A few batches at a time, each into text of its own, written in
    // order: memory holds those batches' text only.
    let rows = |b: &RecordBatch| -> Result<Vec<u8>> {
        let cols = cells(b, &opts)?;
        let mut out = Vec::with_capacity(b.num_rows() * (rule.len() + 1));
        let mut buf = String::new();
        for r in 0..b.num_rows() {
            out.push(b'|');
            for (col, w) in cols.iter().zip(&width) {
                cell(&mut out, *w, col.text(r, &mut buf)?);
            }
            out.push(b'\n');
        }
        Ok(out)
    };
    for window in batches.chunks(2 * rayon::current_num_threads().max(1)) {
        let texts: Vec<Result<Vec<u8>>> = window.par_iter().map(rows).collect();
        for t in texts {
            sink.write_all(&t?)?;
        }
    }
    sink.write_all(rule.as_bytes())?;
    Ok(())
}

/// The temporary file `path` is written to before it is renamed.
fn tmp_path(path: &std::path::Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".trawl-tmp");
    path.with_file_name(name)
}

/// Writes `data` to `path` through a temporary file in the same directory
/// and a rename, so an interrupted run leaves the old file or none.
pub fn write_atomic(path: &std::path::Path, data: &[u8]) -> Result<()> {
    let tmp = tmp_path(path);
    std::fs::write(&tmp, data).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use trawl_ingest::arrow::array::{
        ArrayRef, Float64Array, Int32Array, Int64Array, StringArray, UInt64Array,
    };

    fn batch(names: Vec<Option<String>>) -> RecordBatch {
        let n = names.len();
        RecordBatch::try_from_iter([
            ("function", Arc::new(StringArray::from(names)) as ArrayRef),
            (
                "samples",
                Arc::new(Int64Array::from_iter(
                    (0..n as i64).map(|i| (i != 1).then_some(i * 1000)),
                )),
            ),
            (
                "pct",
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|i| i as f64 / 2.0),
                )),
            ),
        ])
        .unwrap()
    }

    /// `batch` with integer columns of every width the table writes
    /// itself: negatives, nulls and the largest u64.
    fn with_ints(b: RecordBatch) -> RecordBatch {
        let n = b.num_rows();
        let schema = b.schema();
        let mut cols: Vec<(&str, ArrayRef)> = schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .zip(b.columns().iter().cloned())
            .collect();
        cols.extend([
            (
                "delta",
                Arc::new(Int32Array::from_iter((0..n as i32).map(|i| {
                    (i != 2).then_some(if i % 2 == 0 { i32::MIN + i } else { -i * 7 })
                }))) as ArrayRef,
            ),
            (
                "addr",
                Arc::new(UInt64Array::from_iter_values(
                    (0..n as u64).map(|i| u64::MAX - i * 999_999_999_999),
                )) as ArrayRef,
            ),
        ]);
        RecordBatch::try_from_iter(cols).unwrap()
    }

    /// Tables of short cells are arrow's own pretty format, byte for byte,
    /// over more batches than are measured and written at once (the
    /// widest cells in the last one).
    #[test]
    fn short_cells_print_as_arrows_pretty_format() {
        let names = ["main", "", "qsort_r", "µs_λ_名前"].map(|s| Some(s.to_string()));
        let mut names = names.to_vec();
        names.push(None);
        let mut batches: Vec<RecordBatch> = (0..2 * rayon::current_num_threads() + 3)
            .map(|i| with_ints(batch(names[..1 + i % 2].to_vec())))
            .collect();
        batches.insert(1, with_ints(batch(names[..3].to_vec())));
        batches.push(with_ints(batch(names.clone())));
        let mut out = Vec::new();
        write_table(&batches, &mut out).unwrap();
        let expected = trawl_ingest::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        assert_eq!(String::from_utf8(out).unwrap(), expected + "\n");
    }

    /// A cell wider than the cap overflows its column instead of widening
    /// it: the other rows keep the width of the widest short cell.
    #[test]
    fn long_cells_overflow_their_column() {
        let long = "x".repeat(MAX_PADDED_WIDTH + 50);
        let batches = [batch(vec![Some("main".into()), Some(long.clone())])];
        let mut out = Vec::new();
        write_table(&batches, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "+----------+---------+-----+");
        assert_eq!(lines[1], "| function | samples | pct |");
        assert_eq!(lines[3], "| main     | 0       | 0.0 |");
        assert_eq!(lines[4], format!("| {long} |         | 0.5 |"));
    }
}
