//! Tracepoints as typed tables: `tracepoint(EVENT, ...)` returns the
//! samples of one tracepoint (or `perf probe` probe) event with every field
//! of its format as a column of its own, `tracepoint_events()` lists the
//! events, their fields and sample counts.
//!
//! One stored layout, per-event typed views: ingest keeps each sample's
//! payload as perf recorded it (`perf_sample.raw`) and each event's format
//! (`tracepoint_field`: offset, size and how to read every field); a call
//! reads the formats of its event (small files, once per session) and
//! projects one [`field::udf`] call per field over the selected samples.
//! Nothing is decoded at ingest or at open, only the fields of the samples
//! a query reads, where it runs (on a cluster: on the executors). A
//! capture's inputs (or an archive's captures) recorded on different
//! kernels may lay an event out differently: each layout reads its own
//! rows, and a field typed differently across layouts is read as the wider
//! integer (text when they disagree otherwise).

pub mod field;
pub mod pairs;

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Int32Type};
use datafusion::common::plan_err;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{col, lit, Expr};

use crate::functions::{text, Bound, Kind, Param, Spec};
use crate::report::{Answer, Captures, Given, Report, Selects};
use crate::rows::string_values;
use crate::session::Shared;
use futures::future::BoxFuture;

/// One field of a format, as `tracepoint_field` stores it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldDesc {
    pub position: i32,
    pub field: String,
    pub declaration: String,
    pub decode: String,
    pub offset: i32,
    pub size: i32,
    pub big_endian: bool,
    pub common: bool,
}

/// The formats of every tracepoint event of a session's captures, per
/// event: each distinct layout with the (capture, input) pairs that use
/// it.
#[derive(Debug, Default)]
pub struct Formats {
    pub events: BTreeMap<String, BTreeMap<Vec<FieldDesc>, Vec<(String, i32)>>>,
}

/// Reads the `tracepoint_field` files of `shared`'s captures (once per
/// session; a few KB each).
pub(crate) fn formats(shared: &Shared) -> DfResult<Arc<Formats>> {
    shared.memo(|| read_formats(shared))
}

fn read_formats(shared: &Shared) -> DfResult<Formats> {
    let mut per: BTreeMap<(String, String, i32), Vec<FieldDesc>> = BTreeMap::new();
    // Segments' files: read once each, split by their `capture` column.
    let mut segs: Vec<*const crate::captures::SegmentFiles> = Vec::new();
    for c in &shared.captures {
        let Some(s) = &c.in_segment else { continue };
        if segs.contains(&std::sync::Arc::as_ptr(&s.files))
            || !s.files.tables.contains_key("tracepoint_field")
        {
            continue;
        }
        segs.push(std::sync::Arc::as_ptr(&s.files));
        let path = trawl_capture::layout::table_file(&s.files.dir, "tracepoint_field");
        let batches = match &s.files.at {
            Some(at) => read_remote(at)?,
            None => read_parquet(&path)?,
        };
        // (the file's name, the session's) of the segment's captures.
        let names: Vec<(&str, &str)> = shared
            .captures
            .iter()
            .filter_map(|d| {
                let x = d.in_segment.as_ref()?;
                std::sync::Arc::ptr_eq(&x.files, &s.files)
                    .then_some((x.stored_name.as_str(), d.name.as_str()))
            })
            .collect();
        for b in batches {
            let Some(caps) = b.column_by_name("capture") else {
                continue;
            };
            let caps = crate::rows::string_values(caps);
            for (stored, name) in &names {
                let mask: datafusion::arrow::array::BooleanArray = caps
                    .iter()
                    .map(|c| Some(c.as_deref() == Some(*stored)))
                    .collect();
                let part = datafusion::arrow::compute::filter_record_batch(&b, &mask)?;
                if part.num_rows() == 0 {
                    continue;
                }
                add_rows(&part, name, &mut per).map_err(|e| {
                    datafusion::error::DataFusionError::Plan(format!("{}: {e}", path.display()))
                })?;
            }
        }
    }
    for c in shared.captures.iter().filter(|c| c.in_segment.is_none()) {
        let path = trawl_capture::layout::table_file(&c.dir, "tracepoint_field");
        let batches = match &c.remote {
            Some(r) if r.sizes.contains_key("tracepoint_field") => read_remote(&r.at)?,
            None if path.is_file() => read_parquet(&path)?,
            _ => continue,
        };
        for b in batches {
            add_rows(&b, &c.name, &mut per).map_err(|e| {
                datafusion::error::DataFusionError::Plan(format!("{}: {e}", path.display()))
            })?;
        }
    }
    let mut out = Formats::default();
    for ((event, cap, source), mut fields) in per {
        fields.sort();
        out.events
            .entry(event)
            .or_default()
            .entry(fields)
            .or_default()
            .push((cap, source));
    }
    Ok(out)
}

fn read_parquet(path: &std::path::Path) -> DfResult<Vec<RecordBatch>> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let f = std::fs::File::open(path)?;
    let r = ParquetRecordBatchReaderBuilder::try_new(f)?.build()?;
    Ok(r.collect::<Result<Vec<_>, _>>()?)
}

/// The `tracepoint_field` table of a capture in an object store.
fn read_remote(at: &trawl_capture::cloud::Location) -> DfResult<Vec<RecordBatch>> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let bytes = trawl_capture::cloud::block_on(at.read("tracepoint_field.parquet"))
        .map_err(datafusion::error::DataFusionError::Execution)?
        .ok_or_else(|| {
            datafusion::error::DataFusionError::Execution(format!(
                "{}/tracepoint_field.parquet: no such object (removed since the capture was opened)",
                at.url()
            ))
        })?;
    let r = ParquetRecordBatchReaderBuilder::try_new(bytes)?.build()?;
    Ok(r.collect::<Result<Vec<_>, _>>()?)
}

fn add_rows(
    b: &RecordBatch,
    capture: &str,
    per: &mut BTreeMap<(String, String, i32), Vec<FieldDesc>>,
) -> Result<(), String> {
    let column = |name: &str| {
        b.column_by_name(name)
            .ok_or_else(|| format!("no column {name}"))
    };
    let cast = |name: &str, t: &DataType| -> Result<_, String> {
        datafusion::arrow::compute::cast(column(name)?, t).map_err(|e| e.to_string())
    };
    let source = cast("source_id", &DataType::Int32)?;
    let source = source.as_primitive::<Int32Type>();
    let position = cast("position", &DataType::Int32)?;
    let position = position.as_primitive::<Int32Type>();
    let offset = cast("offset", &DataType::Int32)?;
    let offset = offset.as_primitive::<Int32Type>();
    let size = cast("size", &DataType::Int32)?;
    let size = size.as_primitive::<Int32Type>();
    let event = string_values(column("event")?);
    let name = string_values(column("field")?);
    let decode = string_values(column("decode")?);
    let declaration = string_values(column("declaration")?);
    let common = cast("common", &DataType::Boolean)?;
    let common = common.as_boolean();
    let be = cast("big_endian", &DataType::Boolean)?;
    let be = be.as_boolean();
    for i in 0..b.num_rows() {
        let (Some(e), Some(n), Some(d)) = (&event[i], &name[i], &decode[i]) else {
            continue;
        };
        per.entry((e.clone(), capture.to_string(), source.value(i)))
            .or_default()
            .push(FieldDesc {
                position: position.value(i),
                field: n.clone(),
                declaration: declaration[i].clone().unwrap_or_default(),
                decode: d.clone(),
                offset: offset.value(i),
                size: size.value(i),
                big_endian: be.value(i),
                common: common.value(i),
            });
    }
    Ok(())
}

/// The columns of the sample `tracepoint` returns before the fields: name,
/// type, and what it is.
const SAMPLE_COLUMNS: &[(&str, &str, &str)] = &[
    (
        "capture",
        "Utf8",
        "Name of the capture directory the row comes from.",
    ),
    (
        "sample_id",
        "Int64",
        "The sample (`perf_sample.sample_id`).",
    ),
    (
        "time_ns",
        "Int64",
        "Timestamp in ns on the capture's clock.",
    ),
    (
        "pid",
        "Int32",
        "Process that hit the tracepoint (perf script's common_pid).",
    ),
    ("tid", "Int32", "Its thread."),
    ("cpu", "UInt32", "CPU the event happened on."),
    ("comm", "Utf8", "Command of the thread."),
    (
        "stack_id",
        "Int64",
        "Call stack where it happened (`stack.stack_id`; null: not recorded).",
    ),
];

/// The columns a field named like a sample column is given instead: the
/// sample's is renamed as perf's scripting names it (`common_pid`, ...).
fn sample_column_name(c: &str, fields: &[&str]) -> String {
    if fields.contains(&c) {
        format!("common_{c}")
    } else {
        c.to_string()
    }
}

/// The field columns of `event`: (name, data type, expression).
fn field_exprs(formats: &Formats, event: &str) -> DfResult<Vec<(String, Expr)>> {
    let Some(layouts) = formats.events.get(event) else {
        let known: Vec<&str> = formats.events.keys().map(String::as_str).collect();
        return plan_err!(
            "tracepoint: no format for {event:?} in these captures (events with a format: {})",
            if known.is_empty() {
                "none: record tracepoints with perf record -e SYSTEM:NAME; a capture ingested by a trawl older than its \
                 tracepoint_field table holds no formats: ingest it again"
                    .to_string()
            } else {
                known.join(", ")
            }
        );
    };
    // Field names in the order of the first layout, then any others.
    let mut names: Vec<String> = Vec::new();
    for fields in layouts.keys() {
        for f in fields.iter().filter(|f| !f.common) {
            if !names.contains(&f.field) {
                names.push(f.field.clone());
            }
        }
    }
    let udf = Arc::new(field::udf());
    let read = |f: &FieldDesc| {
        Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
            udf.clone(),
            vec![
                col("raw"),
                lit(f.decode.clone()),
                lit(f.offset),
                lit(f.size),
                lit(f.big_endian),
            ],
        ))
    };
    let mut out = Vec::new();
    for name in names {
        let per: Vec<(&Vec<(String, i32)>, Option<&FieldDesc>)> = layouts
            .iter()
            .map(|(fields, users)| (users, fields.iter().find(|f| f.field == name && !f.common)))
            .collect();
        let decodes: Vec<&str> = per
            .iter()
            .filter_map(|(_, f)| f.map(|f| f.decode.as_str()))
            .collect();
        let target = common_type(&decodes);
        let expr = if per.len() == 1 {
            let f = per[0].1.expect("one layout has every field");
            read(f)
        } else {
            let mut whens = Vec::new();
            for (users, f) in &per {
                let Some(f) = f else { continue };
                let mut e = read(f);
                if let Some(t) = &target {
                    e = Expr::Cast(datafusion::logical_expr::Cast::new(Box::new(e), t.clone()));
                }
                whens.push((Box::new(used_by(users)), Box::new(e)));
            }
            Expr::Case(datafusion::logical_expr::expr::Case::new(None, whens, None))
        };
        out.push((name, expr));
    }
    Ok(out)
}

/// The type every layout's decoding of a field is cast to, when they
/// differ: the wider integer, else text.
fn common_type(decodes: &[&str]) -> Option<DataType> {
    let types: Vec<DataType> = decodes
        .iter()
        .filter_map(|d| field::Decode::parse(d).map(|d| d.data_type()))
        .collect();
    if types.windows(2).all(|w| w[0] == w[1]) {
        return None;
    }
    if types.iter().all(|t| t.is_integer()) {
        return Some(if types.iter().all(|t| t.is_unsigned_integer()) {
            DataType::UInt64
        } else {
            DataType::Int64
        });
    }
    Some(DataType::Utf8)
}

/// True on the rows of these (capture, input) pairs.
fn used_by(users: &[(String, i32)]) -> Expr {
    let mut by_capture: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (c, s) in users {
        by_capture.entry(c).or_default().push(*s);
    }
    let mut parts: Vec<Expr> = Vec::new();
    for (c, sources) in by_capture {
        parts.push(
            col("capture")
                .eq(lit(c))
                .and(col("source_id").in_list(sources.into_iter().map(lit).collect(), false)),
        );
    }
    parts
        .into_iter()
        .reduce(Expr::or)
        .unwrap_or_else(|| lit(false))
}

/// The projection of a `tracepoint` call: the sample's columns then the
/// event's fields.
fn tracepoint_columns(b: &Bound, shared: &Arc<Shared>) -> DfResult<Vec<Expr>> {
    let Some(event) = text(b, "event") else {
        return plan_err!("tracepoint: give the event, e.g. tracepoint('sched:sched_wakeup')");
    };
    let fields = field_exprs(formats(shared)?.as_ref(), &event)?;
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    let mut out: Vec<Expr> = SAMPLE_COLUMNS
        .iter()
        .map(|(c, _, _)| col(*c).alias(sample_column_name(c, &names)))
        .collect();
    for (n, e) in fields {
        out.push(e.alias(n));
    }
    Ok(out)
}

/// The columns `tracepoint(EVENT)` returns for each event of the
/// session's captures, for `trawl tables`: (event, column, type, what it
/// is).
pub fn event_columns(shared: &Arc<Shared>) -> DfResult<Vec<[String; 4]>> {
    let formats = formats(shared)?;
    let mut out = Vec::new();
    for (event, layouts) in &formats.events {
        let fields = field_exprs(&formats, event)?;
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        for (c, t, doc) in SAMPLE_COLUMNS {
            out.push([
                event.clone(),
                sample_column_name(c, &names),
                t.to_string(),
                doc.to_string(),
            ]);
        }
        for (n, _) in &fields {
            let descs: Vec<&FieldDesc> = layouts
                .keys()
                .flat_map(|fs| fs.iter().filter(|f| f.field == *n && !f.common))
                .collect();
            let decodes: Vec<&str> = descs.iter().map(|f| f.decode.as_str()).collect();
            let t = common_type(&decodes).or_else(|| {
                decodes
                    .first()
                    .and_then(|d| field::Decode::parse(d))
                    .map(|d| d.data_type())
            });
            let mut decls: Vec<&str> = descs.iter().map(|f| f.declaration.as_str()).collect();
            decls.dedup();
            out.push([
                event.clone(),
                n.clone(),
                t.map(|t| t.to_string()).unwrap_or_default(),
                format!("Field of the format: `{}`.", decls.join("` / `")),
            ]);
        }
    }
    Ok(out)
}

const SELECTION: &[Param] = &[
    Param {
        name: "event",
        kind: Kind::Text,
        doc: "the event, system:name (e.g. sched:sched_wakeup, probe_app:func)",
    },
    Param {
        name: "pid",
        kind: Kind::IntList,
        doc: "only samples of these processes",
    },
    Param {
        name: "tid",
        kind: Kind::IntList,
        doc: "only samples of these threads",
    },
    Param {
        name: "comm",
        kind: Kind::TextList,
        doc: "only samples of these commands",
    },
    Param {
        name: "from_ns",
        kind: Kind::Int,
        doc: "only samples at or after this time_ns",
    },
    Param {
        name: "to_ns",
        kind: Kind::Int,
        doc: "only samples before this time_ns",
    },
    Param {
        name: "capture",
        kind: Kind::TextList,
        doc: "only these captures",
    },
];

/// `tracepoint(event, ...)`.
pub static TRACEPOINT: Spec = Spec {
    name: "tracepoint",
    doc: "The samples of one tracepoint or probe event in time order (capture, sample_id, time_ns, pid, tid, cpu, comm, stack_id), with every field of the event's format as a column named as in the format (integers with the format's signedness, char arrays as text, __data_loc strings and arrays); a sample column whose name a field takes is called common_NAME.",
    sql: include_str!("../../analyses/perf/tracepoint.sql"),
    positional: 1,
    params: SELECTION,
    columns: Some(tracepoint_columns),
    inputs: None,
};

/// `tracepoint_events()`.
pub static TRACEPOINT_EVENTS: Spec = Spec {
    name: "tracepoint_events",
    doc: "The tracepoint and probe events of the captures: samples, and the fields tracepoint(EVENT) reads (name and decoding, in format order), one row per event and layout.",
    sql: include_str!("../../analyses/perf/tracepoint_events.sql"),
    positional: 0,
    params: &[Param { name: "capture", kind: Kind::TextList, doc: "only these captures" }],
    columns: None,
    inputs: None,
};

pub static SPECS: &[&Spec] = &[
    &TRACEPOINT,
    &TRACEPOINT_EVENTS,
    &pairs::TRACEPOINT_PAIRS,
    &pairs::LATENCY,
];

/// The tracepoint reports.
pub static REPORTS: &[&Report] = &[&TRACEPOINTS_REPORT, &pairs::LATENCY_REPORT];

/// `trawl report tracepoints`.
pub static TRACEPOINTS_REPORT: Report = Report {
    name: "tracepoints",
    about: "Tracepoints and probes: with --event SYSTEM:NAME, its samples in time order with every field of the event's format as a column (the capture's own format descriptions); without, the events with their samples and fields.",
    captures: Captures::Many,
    opts: Vec::new,
    selects: Selects::Events,
    t0: false,
    limit: true,
    run: run_tracepoints,
};

fn run_tracepoints<'a>(
    s: &'a crate::Session,
    g: &'a Given,
) -> BoxFuture<'a, crate::error::Result<Answer>> {
    Box::pin(async move {
        let f = g.filter(s).await?;
        let Some(event) = &f.event else {
            let mut args = Vec::new();
            for c in &f.captures {
                args.extend([lit("capture"), lit(c.as_str())]);
            }
            return Ok(Answer::rows(
                crate::functions::call(s, "tracepoint_events", &args).await?,
            ));
        };
        let mut args = vec![lit("event"), lit(event.as_str())];
        f.selection_args(&mut args);
        Ok(Answer::rows(
            crate::functions::call(s, "tracepoint", &args).await?,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_that_disagree_read_as_one_type() {
        assert_eq!(common_type(&["i32", "i32"]), None);
        assert_eq!(common_type(&["i32", "u64"]), Some(DataType::Int64));
        assert_eq!(common_type(&["u32", "u64"]), Some(DataType::UInt64));
        assert_eq!(common_type(&["str", "loc:str"]), None);
        assert_eq!(common_type(&["str", "u64"]), Some(DataType::Utf8));
        assert_eq!(sample_column_name("pid", &["pid", "prio"]), "common_pid");
        assert_eq!(sample_column_name("tid", &["pid", "prio"]), "tid");
    }
}
