//! `_stack_key_cost`: the exclusive and inclusive cost of each hotspot key,
//! the input of `hotspots` (analyses/perf/hotspots.sql).
//!
//! A key's inclusive cost is the weight of the selected stacks that hold
//! it anywhere, each stack counted once however often the key recurs in it
//! (an event adds to a function's inclusive metric once per stack: "Oracle
//! Solaris Studio Performance Analyzer", Oracle, 2013 — perf report
//! --children does the same); its exclusive cost is the weight of the
//! stacks whose leaf (depth 0, innermost inline level 0) has it. In SQL that
//! is a join of every frame of every selected stack with its keys and a
//! grouping by (stack, key): two hash joins and an aggregation over tens of
//! millions of rows (2.9 s of a 3.6 M-sample capture's 485 K stacks). Here
//! the stacks and the keys come from SQL as before — `stack_weight(...)`
//! chooses and weighs the samples, `hotspot_key(...)` names every frame —
//! and one pass over `stack` gathers each stack's keys, dropping repeats.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Int64Type, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{
    Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    execute_stream, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion::prelude::{col, lit, Expr};
use futures::{StreamExt, TryStreamExt};
use rustc_hash::FxHashMap;

use crate::functions::Bound;

/// The table's name in the session and in hotspots.sql.
pub const NAME: &str = "_stack_key_cost";

/// The selection parameters passed on to `stack_weight` and those passed
/// on to `hotspot_key`.
const SELECTION: &[&str] = &[
    "event", "weight", "pid", "tid", "comm", "from_ns", "to_ns", "capture",
];
const KEYING: &[&str] = &["by", "inline", "capture"];

/// The columns: the key (as `hotspot_key` gives it), then the samples and
/// weight of the stacks whose leaf has it and of those holding it.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key1", DataType::Utf8, true),
        Field::new("key2", DataType::Utf8, true),
        Field::new("key3", DataType::UInt32, true),
        Field::new("self_n", DataType::Int64, false),
        Field::new("self_w", DataType::Int64, false),
        Field::new("total_n", DataType::Int64, false),
        Field::new("total_w", DataType::Int64, false),
    ]))
}

/// The table for a call's arguments (a hotspots call's; missing ones are
/// NULL, the defaults).
pub fn table(b: &Bound, shared: &Arc<crate::Shared>) -> StackKeyCost {
    let args = |names: &[&str]| -> Vec<Expr> {
        let mut out = Vec::new();
        for &n in names {
            if let Some(v) = b.get(n).filter(|v| !v.is_null()) {
                out.push(lit(n));
                out.push(lit(v.clone()));
            }
        }
        out
    };
    StackKeyCost {
        selection: args(SELECTION),
        keying: args(KEYING),
        captures: crate::functions::texts(b, "capture").unwrap_or_default(),
        bound: b.clone(),
        shared: shared.clone(),
    }
}

/// `hotspots`' input: `_stack_key_cost` for the call's arguments.
pub(crate) fn inputs(
    b: &Bound,
    shared: &Arc<crate::Shared>,
) -> DfResult<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    Ok(vec![(NAME, Arc::new(table(b, shared)))])
}

/// `_stack_key_cost` for one call: its scan plans the three inputs in the
/// session of the query and returns a [`StackKeyCostExec`] over them.
pub struct StackKeyCost {
    selection: Vec<Expr>,
    keying: Vec<Expr>,
    captures: Vec<String>,
    bound: Bound,
    shared: Arc<crate::Shared>,
}

/// The same rows in SQL (analyses/perf/stack_key_cost.sql), for engines
/// that have only DataFusion's operators (a cluster's executors).
pub const SQL: &str = include_str!("../analyses/perf/stack_key_cost.sql");

impl StackKeyCost {
    /// The table as a plan of DataFusion's own operators (the joins and
    /// groupings of [`SQL`]), its parameters bound to the call's
    /// arguments, in the session `state` belongs to.
    pub async fn sql_plan(&self, state: &dyn DfSession) -> DfResult<LogicalPlan> {
        let s = crate::Session::over(state, self.shared.clone())?;
        let plan = s.ctx.state().create_logical_plan(SQL).await?;
        crate::functions::bind_plan(crate::functions::inline_views(plan)?, &self.bound)
    }
}

impl fmt::Debug for StackKeyCost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StackKeyCost")
    }
}

#[async_trait]
impl TableProvider for StackKeyCost {
    fn schema(&self) -> SchemaRef {
        schema()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let s = crate::Session::over(state, self.shared.clone())?;
        let plan = |r: crate::Result<datafusion::prelude::DataFrame>| async move {
            match r {
                Ok(df) => df.create_physical_plan().await,
                Err(crate::Error::DataFusion(e)) => Err(e),
                Err(e) => Err(DataFusionError::Plan(format!("{NAME}: {e}"))),
            }
        };
        let weights =
            plan(crate::analyses::call(&s, "stack_weight", &self.selection).await).await?;
        let keys = plan(crate::analyses::call(&s, "hotspot_key", &self.keying).await).await?;
        let mut st = s.ctx.table("stack").await?.select(vec![
            col("capture"),
            col("stack_id"),
            col("depth"),
            col("frame_id"),
        ])?;
        if !self.captures.is_empty() {
            let names = self
                .captures
                .iter()
                .map(|c| lit(ScalarValue::from(c.as_str())));
            st = st.filter(col("capture").in_list(names.collect(), false))?;
        }
        let stacks = st.create_physical_plan().await?;
        Ok(Arc::new(StackKeyCostExec::new(
            [weights, keys, stacks],
            projection.cloned(),
        )))
    }
}

/// Computes `_stack_key_cost` from its three inputs: the selected stacks'
/// weights (`stack_weight`), every frame's keys (`hotspot_key`) and the
/// frames of the stacks (`stack`). One partition.
#[derive(Debug)]
pub struct StackKeyCostExec {
    inputs: [Arc<dyn ExecutionPlan>; 3],
    projection: Option<Vec<usize>>,
    properties: Arc<PlanProperties>,
}

impl StackKeyCostExec {
    fn new(inputs: [Arc<dyn ExecutionPlan>; 3], projection: Option<Vec<usize>>) -> Self {
        let out = match &projection {
            Some(p) => Arc::new(
                schema()
                    .project(p)
                    .expect("a projection of the table's columns"),
            ),
            None => schema(),
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(out),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        StackKeyCostExec {
            inputs,
            projection,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for StackKeyCostExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "StackKeyCostExec")
    }
}

impl ExecutionPlan for StackKeyCostExec {
    fn name(&self) -> &'static str {
        "StackKeyCostExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.inputs.iter().collect()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _: ReplaceChildrenOptions,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let inputs: [Arc<dyn ExecutionPlan>; 3] = children
            .try_into()
            .map_err(|_| DataFusionError::Internal(format!("{NAME}: three inputs")))?;
        Ok(Arc::new(StackKeyCostExec::new(
            inputs,
            self.projection.clone(),
        )))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "{NAME}: no partition {partition}"
            )));
        }
        let [weights, keys, stacks] = self
            .inputs
            .clone()
            .map(|p| execute_stream(p, context.clone()));
        let (weights, keys, stacks) = (weights?, keys?, stacks?);
        let projection = self.projection.clone();
        let rows = async move {
            let weights: Vec<RecordBatch> = weights.try_collect().await?;
            let keys: Vec<RecordBatch> = keys.try_collect().await?;
            let b = compute(&weights, &keys, stacks).await?;
            match &projection {
                Some(p) => Ok(b.project(p)?),
                None => Ok(b),
            }
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.properties.eq_properties.schema().clone(),
            futures::stream::once(rows),
        )))
    }
}

/// Ids (capture index, id) to dense indexes.
#[derive(Default)]
struct Ids(FxHashMap<(u32, i64), u32>);

/// The captures met, by name, in order.
#[derive(Default)]
struct Captures(Vec<String>);

impl Captures {
    /// The index of each row's capture (rows of one file share one name,
    /// so consecutive rows are compared before anything is looked up).
    fn of(&mut self, a: &ArrayRef) -> DfResult<Vec<u32>> {
        let a = cast(a, &DataType::Utf8)?;
        let a = a.as_string::<i32>();
        let mut out = Vec::with_capacity(a.len());
        let mut last: Option<(&str, u32)> = None;
        for i in 0..a.len() {
            let name = if a.is_null(i) { "" } else { a.value(i) };
            let idx = match last {
                Some((l, idx)) if l == name => idx,
                _ => {
                    let idx = match self.0.iter().position(|c| c == name) {
                        Some(p) => p as u32,
                        None => {
                            self.0.push(name.to_string());
                            (self.0.len() - 1) as u32
                        }
                    };
                    last = Some((name, idx));
                    idx
                }
            };
            out.push(idx);
        }
        Ok(out)
    }
}

fn column<'a>(b: &'a RecordBatch, name: &str) -> DfResult<&'a ArrayRef> {
    b.column_by_name(name)
        .ok_or_else(|| DataFusionError::Internal(format!("{NAME}: no column {name}")))
}

fn int64(b: &RecordBatch, name: &str) -> DfResult<Int64Array> {
    Ok(cast(column(b, name)?, &DataType::Int64)?
        .as_primitive::<Int64Type>()
        .clone())
}

/// The cost of every key the selected stacks hold.
async fn compute(
    weights: &[RecordBatch],
    keyed: &[RecordBatch],
    mut stack: SendableRecordBatchStream,
) -> DfResult<RecordBatch> {
    let mut caps = Captures::default();

    // The selected stacks: their samples and weight.
    let mut stacks = Ids::default();
    let (mut n, mut w): (Vec<i64>, Vec<i64>) = (Vec::new(), Vec::new());
    for b in weights {
        let c = caps.of(column(b, "capture")?)?;
        let (id, bn, bw) = (int64(b, "stack_id")?, int64(b, "n")?, int64(b, "w")?);
        for i in 0..b.num_rows() {
            let next = stacks.0.len() as u32;
            let k = *stacks.0.entry((c[i], id.value(i))).or_insert(next);
            if k == next {
                n.push(0);
                w.push(0);
            }
            n[k as usize] += bn.value(i);
            w[k as usize] += bw.value(i);
        }
    }

    // Every frame's keys (one per inline level), the keys numbered; a
    // frame's entries are `key << 1 | innermost level`.
    let fields = schema();
    let key_types: Vec<DataType> = (0..3)
        .map(|i| fields.field(i).data_type().clone())
        .collect();
    let converter = RowConverter::new(
        key_types
            .iter()
            .map(|t| SortField::new(t.clone()))
            .collect(),
    )?;
    let mut keys: Rows = converter.empty_rows(0, 0);
    let mut key_ids: FxHashMap<Box<[u8]>, u32> = FxHashMap::default();
    let mut frame_entries: Vec<(u32, i64, u32)> = Vec::new();
    for b in keyed {
        let c = caps.of(column(b, "capture")?)?;
        let frame = int64(b, "frame_id")?;
        let level = int64(b, "level")?;
        let cols = ["key1", "key2", "key3"]
            .iter()
            .zip(&key_types)
            .map(|(name, t)| Ok(cast(column(b, name)?, t)?))
            .collect::<DfResult<Vec<ArrayRef>>>()?;
        let rows = converter.convert_columns(&cols)?;
        for i in 0..b.num_rows() {
            let r = rows.row(i);
            let id = match key_ids.get(r.as_ref()) {
                Some(&id) => id,
                None => {
                    let id = key_ids.len() as u32;
                    key_ids.insert(r.as_ref().into(), id);
                    keys.push(r);
                    id
                }
            };
            let leaf = u32::from(level.is_valid(i) && level.value(i) == 0);
            frame_entries.push((c[i], frame.value(i), id << 1 | leaf));
        }
    }
    drop(key_ids);
    frame_entries.sort_unstable();
    let mut frames: FxHashMap<(u32, i64), (u32, u32)> = FxHashMap::default();
    let entries: Vec<u32> = frame_entries.iter().map(|e| e.2).collect();
    let mut start = 0;
    while start < frame_entries.len() {
        let (c, f, _) = frame_entries[start];
        let mut end = start + 1;
        while end < frame_entries.len() && frame_entries[end].0 == c && frame_entries[end].1 == f {
            end += 1;
        }
        frames.insert((c, f), (start as u32, (end - start) as u32));
        start = end;
    }
    drop(frame_entries);

    // One pass over the stacks' frames: each selected stack's entries.
    let mut per_stack: Vec<Vec<u32>> = vec![Vec::new(); n.len()];
    while let Some(b) = stack.next().await {
        let b = b?;
        let c = caps.of(column(&b, "capture")?)?;
        let id = int64(&b, "stack_id")?;
        let frame = int64(&b, "frame_id")?;
        let depth = cast(column(&b, "depth")?, &DataType::Int32)?;
        let depth = depth.as_primitive::<Int32Type>();
        let mut last: Option<((u32, i64), Option<u32>)> = None;
        for i in 0..b.num_rows() {
            if id.is_null(i) || frame.is_null(i) {
                continue;
            }
            let sid = (c[i], id.value(i));
            let k = match last {
                Some((l, k)) if l == sid => k,
                _ => {
                    let k = stacks.0.get(&sid).copied();
                    last = Some((sid, k));
                    k
                }
            };
            let Some(k) = k else { continue };
            let Some(&(from, len)) = frames.get(&(c[i], frame.value(i))) else {
                continue;
            };
            let at_leaf = depth.is_valid(i) && depth.value(i) == 0;
            let out = &mut per_stack[k as usize];
            for &e in &entries[from as usize..(from + len) as usize] {
                // Only the leaf frame's innermost level is exclusive.
                out.push(if at_leaf { e } else { e & !1 });
            }
        }
    }
    drop(frames);

    // Each key once per stack; exclusive when any of its entries is.
    let nkeys = keys.num_rows();
    let mut cost = vec![[0i64; 4]; nkeys];
    for (k, mut e) in per_stack.into_iter().enumerate() {
        e.sort_unstable();
        let mut i = 0;
        while i < e.len() {
            let key = e[i] >> 1;
            let mut leaf = false;
            while i < e.len() && e[i] >> 1 == key {
                leaf |= e[i] & 1 == 1;
                i += 1;
            }
            let c = &mut cost[key as usize];
            if leaf {
                c[0] += n[k];
                c[1] += w[k];
            }
            c[2] += n[k];
            c[3] += w[k];
        }
    }

    // The keys some selected stack holds, with their cost.
    let used: Vec<usize> = (0..nkeys)
        .filter(|&k| cost[k][2] > 0 || cost[k][3] != 0)
        .collect();
    let key_cols = converter.convert_rows(used.iter().map(|&k| keys.row(k)))?;
    let mut cols: Vec<ArrayRef> = key_cols;
    for j in 0..4 {
        cols.push(Arc::new(Int64Array::from_iter_values(
            used.iter().map(|&k| cost[k][j]),
        )));
    }
    Ok(RecordBatch::try_new(fields, cols)?)
}
