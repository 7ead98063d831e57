//! `_stack_key_cost`: the exclusive and inclusive cost of each hotspot key,
//! the input of `hotspots` (analyses/perf/hotspots.sql).
//!
//! A key's inclusive cost is the weight of the selected stacks that hold
//! it anywhere, each stack counted once however often the key recurs in it
//! (an event adds to a function's inclusive metric once per stack, as in
//! Oracle Solaris Studio 12.2's Performance Analyzer, "Mapping metrics to
//! program structure", and perf report --children); its exclusive cost is the weight of the
//! stacks whose leaf (depth 0, innermost inline level 0) has it. In SQL that
//! is a join of every frame of every selected stack with its keys and a
//! grouping by (stack, key): two hash joins and an aggregation over tens of
//! millions of rows (2.9 s of a 3.6 M-sample capture's 485 K stacks). Here
//! the samples and the keys come from SQL as before — `selected_sample(...)`
//! chooses and weighs the samples, `hotspot_key(...)` names every frame —
//! and one pass over the samples sums them per stack (while the frames'
//! keys are numbered on a task of their own), then one pass over `stack`,
//! on every core, gathers each selected stack's keys, dropping repeats.

use std::fmt;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int32Type, Int64Type, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::common::spawn_buffered;
use datafusion::physical_plan::execution_plan::{
    Boundedness, ChildrenPropertiesMode, EmissionType, ReplaceChildrenOptions,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    execute_stream, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion::prelude::{col, lit, Expr};
use futures::StreamExt;
use rustc_hash::FxHashMap;

use crate::functions::Bound;

/// The table's name in the session and in hotspots.sql.
pub const NAME: &str = "_stack_key_cost";

/// The selection parameters passed on to `selected_sample` and those passed
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
pub fn table(b: &Bound, shared: &Arc<crate::session::Shared>) -> StackKeyCost {
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
    shared: &Arc<crate::session::Shared>,
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
    shared: Arc<crate::session::Shared>,
}

/// The same rows in SQL (analyses/perf/stack_key_cost.sql), for engines
/// that have only DataFusion's operators (a cluster's executors).
pub const SQL: &str = include_str!("../analyses/perf/stack_key_cost.sql");

impl StackKeyCost {
    /// The table as a plan of DataFusion's own operators (the joins and
    /// groupings of [`SQL`]), its parameters bound to the call's
    /// arguments, in the session `state` belongs to.
    pub async fn sql_plan(&self, state: &dyn DfSession) -> DfResult<LogicalPlan> {
        let s = crate::session::Session::over(state, self.shared.clone())?;
        let plan = s.ctx.state().create_logical_plan(SQL).await?;
        crate::functions::bind_plan(
            crate::functions::inline_views(plan)?,
            &self.bound,
            &self.shared,
        )
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
        let s = crate::session::Session::over(state, self.shared.clone())?;
        let plan = |r: crate::error::Result<datafusion::prelude::DataFrame>| async move {
            r.map_err(to_df)?.create_physical_plan().await
        };
        let samples = crate::functions::call(&s, "selected_sample", &self.selection)
            .await
            .and_then(|df| Ok(df.select_columns(&["segment", "stack_id", "cost"])?));
        let samples = plan(samples).await?;
        let keys = plan(crate::functions::call(&s, "hotspot_key", &self.keying).await).await?;
        let mut st = s.ctx.table("stack").await?.select(vec![
            col("segment"),
            col("stack_id"),
            col("depth"),
            col("frame_id"),
        ])?;
        if !self.captures.is_empty() {
            // The stacks of the selected captures' segments.
            let segments: Vec<Expr> = self
                .shared
                .segments_of(&self.captures)
                .into_iter()
                .map(|s| lit(ScalarValue::from(s)))
                .collect();
            st = st.filter(col("segment").in_list(segments, false))?;
        }
        let stacks = st.create_physical_plan().await?;
        Ok(Arc::new(StackKeyCostExec::new(
            [samples, keys, stacks],
            projection.cloned(),
        )))
    }
}

/// Computes `_stack_key_cost` from its three inputs: the selected stacks'
/// samples (`selected_sample`), every frame's keys (`hotspot_key`) and the
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
        let [samples, keys, stacks] = self
            .inputs
            .clone()
            .map(|p| execute_stream(p, context.clone()));
        // The three inputs are read (Parquet decoded, the keys joined) on
        // tasks of their own, ahead of the one pass that consumes them in
        // turn, so that reading and counting overlap.
        let (samples, keys, stacks) = (
            spawn_buffered(samples?, AHEAD),
            spawn_buffered(keys?, AHEAD),
            spawn_buffered(stacks?, AHEAD),
        );
        let projection = self.projection.clone();
        let workers = context.session_config().target_partitions();
        let rows = async move {
            // The frames' keys are numbered and indexed on a task of their
            // own while this one sums the samples per stack: neither needs
            // the other until the pass over the stacks.
            let caps = Arc::new(Mutex::new(Segments::default()));
            let index = SpawnedTask::spawn(KeyIndex::build(keys, caps.clone()));
            let b = compute(samples, index, stacks, caps, workers).await?;
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

/// Batches an input is read ahead of the pass consuming it.
const AHEAD: usize = 8;

/// Ids of each segment (stack ids, frame ids) to values: in a vector
/// indexed by id while ids come about in order (trawl numbers stacks and
/// frames from 0), else in a hash map, so that a few large ids (a capture
/// written by another tool) cost no more than they hold. The vector holds
/// [`Slot::NONE`] where no id is (an `Option` would double a `u32`'s
/// size, and each lookup is a cache miss in a vector larger than the
/// cache).
struct Ids<T: Slot> {
    dense: Vec<Vec<T>>,
    sparse: FxHashMap<(u32, i64), T>,
}

/// A value of [`Ids`], with the one value it never holds.
trait Slot: Copy + PartialEq {
    const NONE: Self;
}

impl Slot for u32 {
    const NONE: Self = u32::MAX;
}

impl Slot for (u32, u32) {
    const NONE: Self = (u32::MAX, u32::MAX);
}

impl<T: Slot> Default for Ids<T> {
    fn default() -> Self {
        Ids {
            dense: Vec::new(),
            sparse: FxHashMap::default(),
        }
    }
}

impl<T: Slot> Ids<T> {
    fn get(&self, capture: u32, id: i64) -> Option<T> {
        let dense = usize::try_from(id).ok().and_then(|i| {
            let v = *self.dense.get(capture as usize)?.get(i)?;
            (v != T::NONE).then_some(v)
        });
        dense.or_else(|| self.sparse.get(&(capture, id)).copied())
    }

    fn insert(&mut self, capture: u32, id: i64, v: T) {
        let c = capture as usize;
        if self.dense.len() <= c {
            self.dense.resize_with(c + 1, Vec::new);
        }
        let d = &mut self.dense[c];
        match usize::try_from(id) {
            // The vector grows at most to twice what it holds (and 4 K).
            Ok(i) if v != T::NONE && (i < d.len() || i <= 2 * d.len() + 4096) => {
                if d.len() <= i {
                    d.resize(i + 1, T::NONE);
                }
                d[i] = v;
            }
            _ => {
                if let Some(old) = usize::try_from(id).ok().and_then(|i| d.get_mut(i)) {
                    *old = T::NONE;
                }
                self.sparse.insert((capture, id), v);
            }
        }
    }
}

/// The segments met, by name, numbered in order of arrival.
#[derive(Default)]
struct Segments(std::collections::HashMap<String, u32>);

impl Segments {
    /// The number of each row's segment.
    fn of(&mut self, a: &ArrayRef) -> DfResult<Vec<u32>> {
        crate::rows::string_ids(a, &mut self.0).map_err(to_df)
    }
}

/// A trawl error as DataFusion's (the errors of a scan and a stream).
fn to_df(e: crate::error::Error) -> DataFusionError {
    match e {
        crate::error::Error::DataFusion(e) => e,
        e => DataFusionError::Plan(format!("{NAME}: {e}")),
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

/// The cost per key of the stacks one worker of the pass counted, summed
/// run by run of each stack's rows.
struct Accumulator {
    /// Per key: self samples, self weight, total samples, total weight.
    cost: Vec<[i64; 4]>,
    /// Per stack: where its counted keys are in `kept` (start, length), or
    /// [`Slot::NONE`].
    counted: Vec<(u32, u32)>,
    /// Counted keys of the stacks (`key << 1 | exclusive`), stack by stack,
    /// each stack's sorted.
    kept: Vec<u32>,
    merged: Vec<u32>,
}

impl Accumulator {
    fn new(keys: usize, stacks: usize) -> Self {
        Accumulator {
            cost: vec![[0; 4]; keys],
            counted: vec![<(u32, u32)>::NONE; stacks],
            kept: Vec::new(),
            merged: Vec::new(),
        }
    }

    /// The keys counted for stack `k`, sorted.
    fn counted(&self, k: usize) -> &[u32] {
        counted(&self.kept, self.counted[k])
    }

    /// Counts the keys of one run of stack `k`'s rows (`entries`, emptied),
    /// the stack's samples and weight `[n, w]`.
    fn count(&mut self, k: usize, [n, w]: [i64; 2], entries: &mut Vec<u32>) {
        // Each key once, exclusive when any of its entries is: sorted,
        // an exclusive entry (bit 0 set) comes right after the others.
        entries.sort_unstable();
        let mut keys = std::mem::take(&mut self.merged);
        keys.clear();
        for &e in entries.iter() {
            match keys.last_mut() {
                Some(l) if *l >> 1 == e >> 1 => *l |= e & 1,
                _ => keys.push(e),
            }
        }
        entries.clear();
        let old = counted(&self.kept, self.counted[k]);
        // What this run adds to what was counted: new keys, and keys now
        // found exclusive.
        let mut union = Vec::with_capacity(if old.is_empty() {
            0
        } else {
            old.len() + keys.len()
        });
        let cost = &mut self.cost;
        merge_keys(&keys, old, |a, was| {
            let e = a.unwrap_or(0) | was.unwrap_or(0);
            let c = &mut cost[(e >> 1) as usize];
            if was.is_none() {
                c[2] += n;
                c[3] += w;
            }
            if e & 1 == 1 && was.is_none_or(|b| b & 1 == 0) {
                c[0] += n;
                c[1] += w;
            }
            if !old.is_empty() {
                union.push(e);
            }
        });
        let start = self.kept.len() as u32;
        if old.is_empty() {
            self.kept.extend_from_slice(&keys);
        } else {
            self.kept.extend_from_slice(&union);
        }
        self.counted[k] = (start, self.kept.len() as u32 - start);
        self.merged = keys;
    }

    /// Adds what another worker counted. A stack both counted (its rows
    /// split between them) has each key it holds counted once: what they
    /// both counted is taken off again. `more`: other workers follow, so
    /// the keys counted per stack are kept up to date.
    fn absorb(&mut self, other: Accumulator, nw: &[[i64; 2]], more: bool) {
        for (c, o) in self.cost.iter_mut().zip(&other.cost) {
            for (x, y) in c.iter_mut().zip(o) {
                *x += y;
            }
        }
        let mut union = Vec::new();
        for (k, &[n, w]) in nw.iter().enumerate() {
            let theirs = other.counted(k);
            if theirs.is_empty() {
                continue;
            }
            let ours = counted(&self.kept, self.counted[k]);
            if ours.is_empty() {
                if more {
                    let start = self.kept.len() as u32;
                    self.kept.extend_from_slice(theirs);
                    self.counted[k] = (start, theirs.len() as u32);
                }
                continue;
            }
            union.clear();
            let cost = &mut self.cost;
            merge_keys(ours, theirs, |a, b| {
                if let (Some(a), Some(b)) = (a, b) {
                    let c = &mut cost[(a >> 1) as usize];
                    c[2] -= n;
                    c[3] -= w;
                    if a & b & 1 == 1 {
                        c[0] -= n;
                        c[1] -= w;
                    }
                }
                union.push(a.unwrap_or(0) | b.unwrap_or(0));
            });
            if more {
                let start = self.kept.len() as u32;
                self.kept.extend_from_slice(&union);
                self.counted[k] = (start, union.len() as u32);
            }
        }
    }
}

/// Walks two sorted lists of keys (`key << 1 | exclusive`) in key order,
/// calling `f` once per key with its entry in each list.
fn merge_keys(a: &[u32], b: &[u32], mut f: impl FnMut(Option<u32>, Option<u32>)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i).copied(), b.get(j).copied()) {
            (Some(x), Some(y)) if x >> 1 == y >> 1 => {
                f(Some(x), Some(y));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x >> 1 < y >> 1 => {
                f(Some(x), None);
                i += 1;
            }
            (Some(x), None) => {
                f(Some(x), None);
                i += 1;
            }
            (_, y) => {
                f(None, y);
                j += 1;
            }
        }
    }
}

/// The keys at `(start, length)` of `kept`.
fn counted(kept: &[u32], at: (u32, u32)) -> &[u32] {
    match at {
        c if c == <(u32, u32)>::NONE => &[],
        (from, len) => &kept[from as usize..(from + len) as usize],
    }
}

/// What the pass over the stacks reads: the selected stacks' indexes,
/// samples and weight, and every frame's keys.
struct PassInput {
    stacks: Ids<u32>,
    nw: Vec<[i64; 2]>,
    frames: Ids<(u32, u32)>,
    entries: Vec<u32>,
}

impl PassInput {
    /// Counts the selected stacks of one batch of `stack` rows. A stack's
    /// rows come one after another (a run); each run's entries are
    /// reduced to its keys, once each, and counted.
    fn count_batch(
        &self,
        b: &RecordBatch,
        c: &[u32],
        acc: &mut Accumulator,
        scratch: &mut Vec<u32>,
    ) -> DfResult<()> {
        let id = int64(b, "stack_id")?;
        let frame = int64(b, "frame_id")?;
        let depth = cast(column(b, "depth")?, &DataType::Int32)?;
        let depth = depth.as_primitive::<Int32Type>();
        let mut run: Option<u32> = None;
        let mut last: Option<((u32, i64), Option<u32>)> = None;
        for i in 0..b.num_rows() {
            if id.is_null(i) || frame.is_null(i) {
                continue;
            }
            let sid = (c[i], id.value(i));
            let k = match last {
                Some((l, k)) if l == sid => k,
                _ => {
                    let k = self.stacks.get(sid.0, sid.1);
                    last = Some((sid, k));
                    k
                }
            };
            let Some(k) = k else { continue };
            if run != Some(k) {
                if let Some(r) = run {
                    acc.count(r as usize, self.nw[r as usize], scratch);
                }
                run = Some(k);
            }
            let Some((from, len)) = self.frames.get(c[i], frame.value(i)) else {
                continue;
            };
            let at_leaf = depth.is_valid(i) && depth.value(i) == 0;
            for &e in &self.entries[from as usize..(from + len) as usize] {
                // Only the leaf frame's innermost level is exclusive.
                scratch.push(if at_leaf { e } else { e & !1 });
            }
        }
        if let Some(r) = run {
            acc.count(r as usize, self.nw[r as usize], scratch);
        }
        Ok(())
    }
}

/// One worker of the pass over the stacks: takes the next batch of `stack`
/// rows while there is one, and counts it.
async fn count_stacks(
    stack: Arc<futures::lock::Mutex<SendableRecordBatchStream>>,
    input: Arc<PassInput>,
    caps: Arc<Mutex<Segments>>,
    nkeys: usize,
) -> DfResult<Accumulator> {
    let mut acc = Accumulator::new(nkeys, input.nw.len());
    let mut scratch = Vec::new();
    loop {
        let next = stack.lock().await.next().await;
        let Some(b) = next else { break };
        let b = b?;
        let c = caps.lock().unwrap().of(column(&b, "segment")?)?;
        input.count_batch(&b, &c, &mut acc, &mut scratch)?;
    }
    Ok(acc)
}

/// The keys of every frame: each frame's entries (one per inline level,
/// `key << 1 | innermost level`), the keys numbered by their row bytes.
struct KeyIndex {
    converter: RowConverter,
    keys: Rows,
    frames: Ids<(u32, u32)>,
    entries: Vec<u32>,
}

impl KeyIndex {
    async fn build(
        mut keyed: SendableRecordBatchStream,
        caps: Arc<Mutex<Segments>>,
    ) -> DfResult<KeyIndex> {
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
        // The keys' ids, found by their row bytes in `keys` (no allocation
        // per key).
        let mut key_ids: hashbrown::HashTable<u32> = hashbrown::HashTable::new();
        let hash = |b: &[u8]| rustc_hash::FxBuildHasher.hash_one(b);
        let mut frame_entries: Vec<(u32, i64, u32)> = Vec::new();
        while let Some(b) = keyed.next().await {
            let b = b?;
            let c = caps.lock().unwrap().of(column(&b, "segment")?)?;
            let frame = int64(&b, "frame_id")?;
            let level = int64(&b, "level")?;
            let cols = ["key1", "key2", "key3"]
                .iter()
                .zip(&key_types)
                .map(|(name, t)| Ok(cast(column(&b, name)?, t)?))
                .collect::<DfResult<Vec<ArrayRef>>>()?;
            let rows = converter.convert_columns(&cols)?;
            frame_entries.reserve(b.num_rows());
            for i in 0..b.num_rows() {
                let r = rows.row(i);
                let h = hash(r.as_ref());
                let id = match key_ids.find(h, |&k| keys.row(k as usize).as_ref() == r.as_ref()) {
                    Some(&id) => id,
                    None => {
                        let id = keys.num_rows() as u32;
                        keys.push(r);
                        key_ids.insert_unique(h, id, |&k| hash(keys.row(k as usize).as_ref()));
                        id
                    }
                };
                let leaf = u32::from(level.is_valid(i) && level.value(i) == 0);
                frame_entries.push((c[i], frame.value(i), id << 1 | leaf));
            }
        }
        drop(key_ids);
        frame_entries.sort_unstable();
        let mut frames: Ids<(u32, u32)> = Ids::default();
        let entries: Vec<u32> = frame_entries.iter().map(|e| e.2).collect();
        let mut start = 0;
        while start < frame_entries.len() {
            let (c, f, _) = frame_entries[start];
            let mut end = start + 1;
            while end < frame_entries.len()
                && frame_entries[end].0 == c
                && frame_entries[end].1 == f
            {
                end += 1;
            }
            frames.insert(c, f, (start as u32, (end - start) as u32));
            start = end;
        }
        Ok(KeyIndex {
            converter,
            keys,
            frames,
            entries,
        })
    }
}

/// The cost of every key the selected stacks hold.
async fn compute(
    mut samples: SendableRecordBatchStream,
    index: SpawnedTask<DfResult<KeyIndex>>,
    stack: SendableRecordBatchStream,
    caps: Arc<Mutex<Segments>>,
    workers: usize,
) -> DfResult<RecordBatch> {
    // The selected samples per stack: how many, what they weigh.
    let mut stacks: Ids<u32> = Ids::default();
    let mut nw: Vec<[i64; 2]> = Vec::new();
    while let Some(b) = samples.next().await {
        let b = b?;
        let c = caps.lock().unwrap().of(column(&b, "segment")?)?;
        let (id, cost) = (int64(&b, "stack_id")?, int64(&b, "cost")?);
        for i in 0..b.num_rows() {
            if id.is_null(i) {
                continue;
            }
            let k = match stacks.get(c[i], id.value(i)) {
                Some(k) => k as usize,
                None => {
                    stacks.insert(c[i], id.value(i), nw.len() as u32);
                    nw.push([0, 0]);
                    nw.len() - 1
                }
            };
            let s = &mut nw[k];
            s[0] += 1;
            if cost.is_valid(i) {
                s[1] += cost.value(i);
            }
        }
    }
    let KeyIndex {
        converter,
        keys,
        frames,
        entries,
    } = index
        .join()
        .await
        .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;

    // One pass over the stacks' frames, on every core: each worker takes
    // the next batch and counts each stack's keys once. A stack whose rows
    // are split (between batches, or by a scan's partitions) has its keys
    // counted once all the same: the keys each worker counted per stack
    // are kept, a later run adds only the new, and what two workers both
    // counted is taken off when their counts are added.
    let nkeys = keys.num_rows();
    let input = Arc::new(PassInput {
        stacks,
        nw,
        frames,
        entries,
    });
    let stack = Arc::new(futures::lock::Mutex::new(stack));
    let tasks: Vec<_> = (0..workers.max(1))
        .map(|_| {
            SpawnedTask::spawn(count_stacks(
                stack.clone(),
                input.clone(),
                caps.clone(),
                nkeys,
            ))
        })
        .collect();
    let mut counts = Vec::with_capacity(tasks.len());
    for t in tasks {
        counts.push(
            t.join()
                .await
                .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??,
        );
    }
    let mut counts = counts.into_iter();
    let mut acc = counts.next().expect("one worker at least");
    while let Some(other) = counts.next() {
        let more = counts.len() > 0;
        acc.absorb(other, &input.nw, more);
    }
    let cost = acc.cost;

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
    Ok(RecordBatch::try_new(schema(), cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids in order go in the vectors; a large id goes in the map, and
    /// stays found when the vector later grows past it; so does the value
    /// that marks a vector's empty places.
    #[test]
    fn ids_small_and_large() {
        let mut ids: Ids<u32> = Ids::default();
        ids.insert(1, 3_000_000_000, 7);
        for i in 0..10_000 {
            ids.insert(0, i, i as u32);
        }
        ids.insert(0, 20_000, 1);
        ids.insert(0, -5, 2);
        for i in 10_000..30_000 {
            ids.insert(0, i, 9);
        }
        assert!(ids.dense[1].is_empty());
        assert_eq!(ids.get(1, 3_000_000_000), Some(7));
        assert_eq!(ids.get(0, 9_999), Some(9_999));
        assert_eq!(ids.get(0, -5), Some(2));
        assert_eq!(ids.get(0, 20_000), Some(9));
        assert_eq!(ids.get(0, 30_000), None);
        assert_eq!(ids.get(2, 0), None);
        // The value the vector marks empty with is held in the map.
        ids.insert(0, 29_000, u32::MAX);
        assert_eq!(ids.get(0, 29_000), Some(u32::MAX));
        assert_eq!(ids.get(0, 29_001), Some(9));
    }

    /// The samples and weight of the stacks of the tests below.
    const NW: [[i64; 2]; 3] = [[2, 20], [1, 5], [1, 1]];

    fn e(key: u32, leaf: bool) -> u32 {
        key << 1 | u32::from(leaf)
    }

    /// The cost per key of the runs below, worked by hand from their
    /// entries: stack 0 (2 samples, weight 20) has key 1 at the leaf and
    /// keys 2 and 3 above it; stack 1 (1, 5) key 2 at the leaf and key 3;
    /// stack 2 (1, 1) key 4, at the leaf in one of its runs.
    const EXPECTED: [[i64; 4]; 5] = [
        [0, 0, 0, 0],
        [2, 20, 2, 20],
        [1, 5, 3, 25],
        [0, 0, 3, 25],
        [1, 1, 1, 1],
    ];

    /// Keys counted once per stack, also when a stack's rows come in
    /// several runs; exclusive when the leaf's innermost level has the key
    /// in any run.
    #[test]
    fn each_key_once_per_stack_across_runs() {
        let mut acc = Accumulator::new(5, 3);
        // Stack 0: key 1 at the leaf and again up the stack (recursion),
        // key 2; a later run of its rows adds key 2 again and key 3.
        acc.count(0, NW[0], &mut vec![e(1, true), e(2, false), e(1, false)]);
        acc.count(1, NW[1], &mut vec![e(2, true), e(3, false)]);
        acc.count(0, NW[0], &mut vec![e(2, false), e(3, false)]);
        // Stack 2: key 4 found exclusive only in its second run.
        acc.count(2, NW[2], &mut vec![e(4, false)]);
        acc.count(2, NW[2], &mut vec![e(4, true)]);
        assert_eq!(acc.cost, EXPECTED);
    }

    /// The same runs counted by two and by three workers (a stack's runs
    /// split between them) add up to the same cost: what two workers both
    /// counted for a stack is taken off.
    #[test]
    fn workers_count_split_stacks_once() {
        let mut a = Accumulator::new(5, 3);
        let mut b = Accumulator::new(5, 3);
        a.count(0, NW[0], &mut vec![e(1, true), e(2, false), e(1, false)]);
        b.count(1, NW[1], &mut vec![e(2, true), e(3, false)]);
        b.count(0, NW[0], &mut vec![e(2, false), e(3, false)]);
        a.count(2, NW[2], &mut vec![e(4, false)]);
        b.count(2, NW[2], &mut vec![e(4, true)]);
        a.absorb(b, &NW, false);
        assert_eq!(a.cost, EXPECTED);

        let mut w = [(); 3].map(|_| Accumulator::new(5, 3));
        w[0].count(0, NW[0], &mut vec![e(1, true), e(2, false)]);
        w[1].count(0, NW[0], &mut vec![e(1, false), e(2, false), e(3, false)]);
        w[2].count(0, NW[0], &mut vec![e(3, false), e(1, true)]);
        w[1].count(1, NW[1], &mut vec![e(2, true), e(3, false)]);
        w[2].count(2, NW[2], &mut vec![e(4, true)]);
        w[0].count(2, NW[2], &mut vec![e(4, false)]);
        w[1].count(2, NW[2], &mut vec![e(4, true)]);
        let [mut a, b, c] = w;
        a.absorb(b, &NW, true);
        a.absorb(c, &NW, false);
        assert_eq!(a.cost, EXPECTED);
    }
}
