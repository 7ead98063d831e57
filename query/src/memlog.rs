//! Memory access log analyses (Mibu et al., memory access analysis for
//! memory saving): used pages, page reuse (pages whose lifetimes do not
//! overlap can share one physical page), symbol and object use, and the
//! instruction-order × address heatmap.
//!
//! SQL: views `mem_symbol_use`, `mem_object_use`, `mem_reuse_pair`,
//! `_page` and the table functions `pages(page_size)`,
//! `page_reuse_pairs(page_size)` (`analyses/memlog/*.sql`). Rust: [`page_reuse`] (sweep over lifetimes)
//! and [`heatmap`] (one pass over `mem_access` into a bitmap).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::datatypes::{Int32Type, Int64Type, UInt64Type};
use datafusion::functions_aggregate::expr_fn::{count, max, min};
use datafusion::logical_expr::Expr;
use datafusion::prelude::{cast, col, lit, DataFrame};
use futures::StreamExt;

use crate::error::{Error, Result};
use crate::functions::{Kind, Param, Spec};
use crate::session::Session;

/// The accesses of one memory log in a heatmap's zoom.
const HEAT_ACCESS: &str = include_str!("../analyses/memlog/inputs/heat_access.sql");
use datafusion::scalar::ScalarValue;

pub const SYMBOL_USE: &str = include_str!("../analyses/memlog/symbol_use.sql");
pub const OBJECT_USE: &str = include_str!("../analyses/memlog/object_use.sql");
pub const REUSE_PAIR: &str = include_str!("../analyses/memlog/reuse_pair.sql");
/// The view `_page`: `mem_page` at a page size of the caller's choice.
pub const PAGE: &str = include_str!("../analyses/memlog/page.sql");

const PAGE_SIZE: Param = Param {
    name: "page_size",
    kind: Kind::Int,
    doc:
        "bytes: a power of two, a multiple of the ingest page size (default: the ingest page size)",
};

/// `pages(page_size)`.
pub static PAGES: Spec = Spec {
    name: "pages",
    doc: "The used pages of a memory log (Mibu et al.): object, accesses per kind, bytes touched, lifetime.",
    sql: include_str!("../analyses/memlog/pages.sql"),
    positional: 1,
    params: &[PAGE_SIZE],
    columns: None,
    inputs: None,
};

/// `page_reuse_pairs(page_size)`.
pub static PAGE_REUSE_PAIRS: Spec = Spec {
    name: "page_reuse_pairs",
    doc: "Pairs of pages whose lifetimes do not overlap, so one physical page could hold both (Mibu et al.).",
    sql: include_str!("../analyses/memlog/page_reuse_pairs.sql"),
    positional: 1,
    params: &[PAGE_SIZE],
    columns: None,
    inputs: None,
};

/// `mem_symbols(...)`.
pub static MEM_SYMBOLS: Spec = Spec {
    name: "mem_symbols",
    doc: "Functions executed and data objects touched, and those never used (Mibu et al.).",
    sql: include_str!("../analyses/memlog/mem_symbols.sql"),
    positional: 0,
    params: &[
        Param {
            name: "kind",
            kind: Kind::Text,
            doc: "function or object (default: both)",
        },
        Param {
            name: "object",
            kind: Kind::Text,
            doc: "only symbols of objects whose path contains this",
        },
        Param {
            name: "never",
            kind: Kind::Bool,
            doc: "only symbols never executed / never touched",
        },
    ],
    columns: None,
    inputs: None,
};

/// Functions or data objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolKind {
    Function,
    Object,
}

impl crate::choice::Choice for SymbolKind {
    const ALL: &'static [Self] = &[SymbolKind::Function, SymbolKind::Object];
    fn name(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Object => "object",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            SymbolKind::Function => "functions (instruction fetches)",
            SymbolKind::Object => "data objects (loads, stores, modifies)",
        }
    }
}

/// `trawl report mem-symbols`: `mem_symbols(...)`.
pub async fn symbols(
    s: &Session,
    kind: Option<SymbolKind>,
    object: Option<&str>,
    never: bool,
) -> Result<DataFrame> {
    use crate::choice::Choice;
    let mut args = Vec::new();
    if let Some(k) = kind {
        args.extend([lit("kind"), lit(k.name())]);
    }
    if let Some(o) = object {
        args.extend([lit("object"), lit(o)]);
    }
    args.extend([lit("never"), lit(never)]);
    crate::functions::call(s, "mem_symbols", &args).await
}

/// `trawl report mem-objects`: `mem_object_use`, largest mappings first.
pub async fn objects(s: &Session) -> Result<DataFrame> {
    Ok(s.ctx.table("mem_object_use").await?.sort(vec![
        col("capture").sort(true, true),
        col("mapped_pages").sort(false, true),
        col("object").sort(true, true),
    ])?)
}

/// `page_reuse(page_size)`.
pub static PAGE_REUSE: Spec = Spec {
    name: "page_reuse",
    doc: "What page reuse could save per input (Mibu et al.): pages, the fewest pages the accesses need, pairs, spanning pages.",
    sql: "SELECT * FROM _page_reuse",
    positional: 1,
    params: &[PAGE_SIZE],
    columns: None,
    inputs: Some(reuse_inputs),
};

/// `page_reuse_plan(page_size)`.
pub static PAGE_REUSE_PLAN: Spec = Spec {
    name: "page_reuse_plan",
    doc: "Which pages can share one physical page, in order of use (greedy interval partitioning; Mibu et al.).",
    sql: "SELECT * FROM _page_reuse_plan",
    positional: 1,
    params: &[PAGE_SIZE],
    columns: None,
    inputs: Some(reuse_inputs),
};

/// `_page_reuse` and `_page_reuse_plan` for the call's page size.
fn reuse_inputs(
    b: &crate::functions::Bound,
    shared: &std::sync::Arc<crate::session::Shared>,
) -> datafusion::error::Result<
    Vec<(
        &'static str,
        std::sync::Arc<dyn datafusion::catalog::TableProvider>,
    )>,
> {
    let ps = match b.get("page_size") {
        Some(datafusion::scalar::ScalarValue::Int64(Some(p))) if *p > 0 => Some(*p as u64),
        Some(datafusion::scalar::ScalarValue::Int64(Some(p))) => {
            return datafusion::common::plan_err!("page_reuse: page_size {p}: expected bytes > 0")
        }
        _ => None,
    };
    Ok(vec![
        (
            "_page_reuse",
            std::sync::Arc::new(crate::tables::LazyTable::new(
                "page_reuse",
                reuse_schema(),
                shared.clone(),
                move |s| async move { Ok(vec![reuse_batch(&page_reuse(&s, ps).await?)?]) },
            )),
        ),
        (
            "_page_reuse_plan",
            std::sync::Arc::new(crate::tables::LazyTable::new(
                "page_reuse_plan",
                plan_schema(),
                shared.clone(),
                move |s| async move { Ok(vec![plan_batch(&page_reuse(&s, ps).await?)?]) },
            )),
        ),
    ])
}

fn reuse_schema() -> datafusion::arrow::datatypes::SchemaRef {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    let mut f = vec![
        Field::new("capture", DataType::Utf8, false),
        Field::new("source_id", DataType::Int32, false),
    ];
    for n in [
        "page_size",
        "pages",
        "min_pages",
        "saving_pages",
        "saving_bytes",
        "pairs",
        "spanning_pages",
    ] {
        f.push(Field::new(n, DataType::Int64, false));
    }
    std::sync::Arc::new(Schema::new(f))
}

fn plan_schema() -> datafusion::arrow::datatypes::SchemaRef {
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    std::sync::Arc::new(Schema::new(vec![
        Field::new("capture", DataType::Utf8, false),
        Field::new("source_id", DataType::Int32, false),
        Field::new("physical_page", DataType::Int64, false),
        Field::new("order", DataType::Int64, false),
        Field::new("page", DataType::Utf8, false),
        Field::new("first_ordinal", DataType::Int64, false),
        Field::new("last_ordinal", DataType::Int64, false),
    ]))
}

/// The summary rows of `page_reuse`: one per capture input.
pub fn reuse_batch(reuse: &[Reuse]) -> Result<RecordBatch> {
    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray};
    use std::sync::Arc;
    let col_i = |f: &dyn Fn(&Reuse) -> i64| -> ArrayRef {
        Arc::new(Int64Array::from(reuse.iter().map(f).collect::<Vec<_>>()))
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(
            reuse.iter().map(|r| r.capture.clone()).collect::<Vec<_>>(),
        )),
        Arc::new(Int32Array::from(
            reuse.iter().map(|r| r.source_id).collect::<Vec<_>>(),
        )),
        col_i(&|r| r.page_size as i64),
        col_i(&|r| r.pages as i64),
        col_i(&|r| r.min_pages as i64),
        col_i(&|r| r.saving_pages() as i64),
        col_i(&|r| (r.saving_pages() as u64 * r.page_size) as i64),
        col_i(&|r| r.pairs as i64),
        col_i(&|r| r.spanning as i64),
    ];
    Ok(RecordBatch::try_new(reuse_schema(), cols)
        .map_err(datafusion::error::DataFusionError::from)?)
}

/// The rows of `page_reuse_plan`: each page with the physical page that
/// holds it and its order there.
pub fn plan_batch(reuse: &[Reuse]) -> Result<RecordBatch> {
    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray};
    use std::sync::Arc;
    let (mut cap, mut sid, mut slot, mut order, mut page, mut first, mut last) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for r in reuse {
        for (k, sl) in r.plan.iter().enumerate() {
            for (j, l) in sl.iter().enumerate() {
                cap.push(r.capture.clone());
                sid.push(r.source_id);
                slot.push(k as i64);
                order.push(j as i64);
                page.push(format!("{:#x}", l.page));
                first.push(l.first);
                last.push(l.last);
            }
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(cap)),
        Arc::new(Int32Array::from(sid)),
        Arc::new(Int64Array::from(slot)),
        Arc::new(Int64Array::from(order)),
        Arc::new(StringArray::from(page)),
        Arc::new(Int64Array::from(first)),
        Arc::new(Int64Array::from(last)),
    ];
    Ok(RecordBatch::try_new(plan_schema(), cols)
        .map_err(datafusion::error::DataFusionError::from)?)
}

pub async fn register(s: &Session) -> Result<()> {
    s.register_lazy("_page_reuse", reuse_schema(), |s| async move {
        Ok(vec![reuse_batch(&page_reuse(&s, None).await?)?])
    })?;
    s.register_lazy("_page_reuse_plan", plan_schema(), |s| async move {
        Ok(vec![plan_batch(&page_reuse(&s, None).await?)?])
    })?;
    s.define_views(SYMBOL_USE).await?;
    s.define_views(OBJECT_USE).await?;
    s.define_views(REUSE_PAIR).await?;
    s.define_views(PAGE).await?;
    crate::functions::register(s, SPECS).await
}

/// The memory-log table functions.
pub static SPECS: &[&Spec] = &[
    &PAGES,
    &PAGE_REUSE_PAIRS,
    &PAGE_REUSE,
    &PAGE_REUSE_PLAN,
    &MEM_SYMBOLS,
];

/// The page size the capture's `mem_page` was built with (the largest when
/// captures differ), or an error when there is no memory log.
pub async fn ingest_page_size(s: &Session) -> Result<u64> {
    let b = s
        .sql("SELECT CAST(max(page_size) AS BIGINT) AS p FROM mem_page")
        .await?
        .collect()
        .await?;
    let p = first_i64(&b, 0);
    match p {
        Some(p) if p > 0 => Ok(p as u64),
        _ => Err(Error::Usage(
            "no memory log in the capture (mem_page is empty): ingest a lackey or binary memory log first".into(),
        )),
    }
}

/// The arguments of a call taking `page_size`.
fn page_args(page_size: Option<u64>) -> Vec<Expr> {
    page_size
        .map(|p| vec![lit(i64::try_from(p).unwrap_or(i64::MAX))])
        .unwrap_or_default()
}

/// How `trawl report pages` sorts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageSort {
    Address,
    Accesses,
    First,
    Touched,
}

/// `trawl report pages`: `pages(page_size)` sorted, without the numeric
/// address and page size columns.
pub async fn pages(s: &Session, page_size: Option<u64>, sort: PageSort) -> Result<DataFrame> {
    ingest_page_size(s).await?;
    let df = crate::functions::call(s, "pages", &page_args(page_size)).await?;
    let addr = col("page_address").sort(true, true);
    let order = match sort {
        PageSort::Address => vec![
            col("capture").sort(true, true),
            col("source_id").sort(true, true),
            addr,
        ],
        PageSort::Accesses => vec![col("accesses").sort(false, true), addr],
        PageSort::First => vec![col("first_ordinal").sort(true, true), addr],
        PageSort::Touched => vec![col("bytes_touched").sort(false, true), addr],
    };
    Ok(df
        .sort(order)?
        .drop_columns(&["page_address", "page_size"])?)
}

/// `page_reuse(page_size)` (`plan`: `page_reuse_plan(page_size)`).
pub async fn reuse(s: &Session, page_size: Option<u64>, plan: bool) -> Result<DataFrame> {
    ingest_page_size(s).await?;
    let name = if plan {
        "page_reuse_plan"
    } else {
        "page_reuse"
    };
    crate::functions::call(s, name, &page_args(page_size)).await
}

/// `page_reuse_pairs(page_size)`, in order of pages.
pub async fn reuse_pairs(s: &Session, page_size: Option<u64>) -> Result<DataFrame> {
    ingest_page_size(s).await?;
    crate::functions::call(s, "page_reuse_pairs", &page_args(page_size)).await
}

/// A page and its lifetime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Life {
    pub page: u64,
    pub first: i64,
    pub last: i64,
}

/// What page reuse could save in one capture input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reuse {
    pub capture: String,
    pub source_id: i32,
    pub page_size: u64,
    pub pages: usize,
    /// The most pages live at one ordinal: the fewest physical pages the
    /// accesses need when pages with disjoint lifetimes share one.
    pub min_pages: usize,
    /// Pairs (a, b) with a.last < b.first.
    pub pairs: u64,
    /// Pages live across the whole lifetime of another page (page c of
    /// Mibu et al.'s example): touched before and after it.
    pub spanning: usize,
    /// The sharing plan: each inner list is the pages one physical page
    /// holds, in order of use.
    pub plan: Vec<Vec<Life>>,
}

impl Reuse {
    pub fn saving_pages(&self) -> usize {
        self.pages - self.min_pages
    }
}

/// Lifetimes are closed intervals [first, last] of ordinals; a can be
/// reused as b when a.last < b.first. Pairs are counted by binary search
/// over the sorted last ordinals; the plan is greedy interval
/// partitioning, which uses exactly the most pages live at once.
pub fn reuse_of(mut lives: Vec<Life>) -> (usize, u64, usize, Vec<Vec<Life>>) {
    lives.sort_by_key(|l| (l.first, l.last, l.page));
    // Pairs: for each b, the pages whose last < b.first.
    let mut lasts: Vec<i64> = lives.iter().map(|l| l.last).collect();
    lasts.sort_unstable();
    let pairs: u64 = lives
        .iter()
        .map(|b| lasts.partition_point(|&x| x < b.first) as u64)
        .sum();
    // Spanning pages: p with some q, p.first < q.first and q.last < p.last.
    // Walking by first descending, keep the smallest last seen among
    // strictly later firsts.
    let mut spanning = 0;
    let mut min_last_after = i64::MAX;
    let mut i = lives.len();
    while i > 0 {
        let f = lives[i - 1].first;
        let mut j = i;
        while j > 0 && lives[j - 1].first == f {
            j -= 1;
        }
        for l in &lives[j..i] {
            if min_last_after < l.last {
                spanning += 1;
            }
        }
        for l in &lives[j..i] {
            min_last_after = min_last_after.min(l.last);
        }
        i = j;
    }
    // Greedy interval partitioning (by first): reuse the physical page
    // whose current page ended earliest, if it ended before this one
    // starts. Optimal: uses exactly the maximum number of live pages.
    let mut plan: Vec<Vec<Life>> = Vec::new();
    let mut free: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
    for l in &lives {
        match free.peek() {
            Some(Reverse((last, slot))) if *last < l.first => {
                let slot = *slot;
                free.pop();
                plan[slot].push(*l);
                free.push(Reverse((l.last, slot)));
            }
            _ => {
                plan.push(vec![*l]);
                free.push(Reverse((l.last, plan.len() - 1)));
            }
        }
    }
    (plan.len(), pairs, spanning, plan)
}

/// `trawl report page-reuse`: per capture input, the pages, the fewest
/// pages needed, the pairs and the plan.
pub async fn page_reuse(s: &Session, page_size: Option<u64>) -> Result<Vec<Reuse>> {
    ingest_page_size(s).await?;
    let batches = crate::functions::call(s, "pages", &page_args(page_size))
        .await?
        .select_columns(&[
            "capture",
            "source_id",
            "page_address",
            "page_size",
            "first_ordinal",
            "last_ordinal",
        ])?
        .sort(vec![
            col("capture").sort(true, true),
            col("source_id").sort(true, true),
        ])?
        .collect()
        .await?;
    let mut groups: Vec<(String, i32, u64, Vec<Life>)> = Vec::new();
    for b in &batches {
        let cap = crate::rows::string_values(b.column(0));
        let sid = b.column(1).as_primitive::<Int32Type>();
        let page = b.column(2).as_primitive::<UInt64Type>();
        let ps = b.column(3).as_primitive::<Int64Type>();
        let first = b.column(4).as_primitive::<Int64Type>();
        let last = b.column(5).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let c = cap[i].clone().unwrap_or_default();
            let key_matches = groups
                .last()
                .is_some_and(|g| g.0 == c && g.1 == sid.value(i));
            if !key_matches {
                groups.push((c, sid.value(i), ps.value(i) as u64, Vec::new()));
            }
            if let Some(g) = groups.last_mut() {
                g.3.push(Life {
                    page: page.value(i),
                    first: first.value(i),
                    last: last.value(i),
                });
            }
        }
    }
    Ok(groups
        .into_iter()
        .map(|(capture, source_id, page_size, lives)| {
            let pages = lives.len();
            let (min_pages, pairs, spanning, plan) = reuse_of(lives);
            Reuse {
                capture,
                source_id,
                page_size,
                pages,
                min_pages,
                pairs,
                spanning,
                plan,
            }
        })
        .collect())
}

/// Which rows a heatmap has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Only pages touched at least once (rows not contiguous).
    Used,
    /// The whole address range, contiguous.
    Full,
}

#[derive(Clone, Debug)]
pub struct HeatOpts {
    pub view: View,
    /// Bytes per row (power of two); default: the page size (used view) or
    /// what makes about 1024 rows (full view).
    pub bytes_per_row: Option<u64>,
    /// Instructions per column; default: what makes about 1024 columns.
    pub instr_per_col: Option<u64>,
    /// Zoom: addresses [lo, hi).
    pub addr: Option<(u64, u64)>,
    /// Zoom: ordinals [lo, hi].
    pub ordinals: Option<(i64, i64)>,
    /// Only this input of the capture (default: the first memory log).
    pub source_id: Option<i32>,
    /// Refuse images larger than this many cells.
    pub max_cells: u64,
}

impl Default for HeatOpts {
    fn default() -> Self {
        HeatOpts {
            view: View::Used,
            bytes_per_row: None,
            instr_per_col: None,
            addr: None,
            ordinals: None,
            source_id: None,
            max_cells: 1 << 28,
        }
    }
}

/// Cell bits.
pub const LOAD: u8 = 1;
pub const STORE: u8 = 2;

/// An instruction-order × address bitmap: `cells[row * width + col]` has
/// [`LOAD`] and/or [`STORE`] set. Row 0 is the lowest address.
pub struct Heatmap {
    pub width: usize,
    pub height: usize,
    pub cells: Vec<u8>,
    /// Address range [start, end) of each row.
    pub rows: Vec<(u64, u64)>,
    pub ordinal0: i64,
    pub instr_per_col: u64,
    pub bytes_per_row: u64,
    pub source_id: i32,
    /// Accesses drawn.
    pub accesses: u64,
}

/// The accesses a heatmap draws (`heat_access.sql` with `params`).
async fn accesses(s: &Session, params: &[(&str, ScalarValue)]) -> Result<DataFrame> {
    s.sql_with(HEAT_ACCESS, params).await
}

/// Column `c` of the first row of a query result, as i64.
fn first_i64(b: &[RecordBatch], c: usize) -> Option<i64> {
    b.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| crate::rows::i64_at(b, c, 0))
}

/// Builds the heatmap of the first capture of the session.
pub async fn heatmap(s: &Session, o: &HeatOpts) -> Result<Heatmap> {
    if let Some(b) = o.bytes_per_row.filter(|b| !b.is_power_of_two()) {
        return Err(Error::Usage(format!(
            "bytes per row {b}: must be a power of two"
        )));
    }
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let source_id = match o.source_id {
        Some(x) => x,
        None => {
            let b = s
                .sql_with(
                    "SELECT CAST(min(source_id) AS BIGINT) FROM mem_page WHERE capture = $cap",
                    &[("cap", ScalarValue::from(cap.as_str()))],
                )
                .await?
                .collect()
                .await?;
            first_i64(&b, 0).ok_or_else(|| {
                Error::Usage(
                    "no memory log in the capture: ingest a lackey or binary memory log first"
                        .into(),
                )
            })? as i32
        }
    };
    let page_size = ingest_page_size(s).await?;
    // The accesses drawn: this capture's input, in the zoom asked for
    // (`heat_access.sql`); their extent, pages and rows are read from it.
    let params = [
        ("cap", ScalarValue::from(cap.as_str())),
        ("sid", ScalarValue::Int32(Some(source_id))),
        ("alo", ScalarValue::UInt64(o.addr.map(|a| a.0))),
        ("ahi", ScalarValue::UInt64(o.addr.map(|a| a.1))),
        ("olo", ScalarValue::Int64(o.ordinals.map(|a| a.0))),
        ("ohi", ScalarValue::Int64(o.ordinals.map(|a| a.1))),
    ];
    let b = accesses(s, &params)
        .await?
        .aggregate(
            vec![],
            vec![
                min(col("ordinal")),
                max(col("ordinal")),
                min(col("address")),
                max(col("address") + cast(col("size"), DataType::UInt64)),
                count(lit(1)),
            ],
        )?
        .collect()
        .await?;
    let (Some(omin), Some(omax)) = (first_i64(&b, 0), first_i64(&b, 1)) else {
        return Err(Error::Usage(
            "no memory accesses in the range asked for".into(),
        ));
    };
    let (o0, o1) = o.ordinals.unwrap_or((omin, omax));
    let span = (o1 - o0 + 1).max(1) as u64;
    let ipc = o
        .instr_per_col
        .unwrap_or_else(|| span.div_ceil(1024).next_power_of_two())
        .max(1);
    let width = span.div_ceil(ipc) as usize;
    let amin = b[0].column(2).as_primitive::<UInt64Type>().value(0);
    let amax = b[0].column(3).as_primitive::<UInt64Type>().value(0);
    // Rows.
    let (bpr, rows): (u64, Vec<(u64, u64)>) = match o.view {
        View::Used => {
            let bpr = o.bytes_per_row.unwrap_or(page_size);
            let shift = page_size.trailing_zeros();
            let page = col("address") / lit(1u64 << shift);
            let pb = accesses(s, &params)
                .await?
                .select(vec![page.alias("p")])?
                .distinct()?
                .sort(vec![col("p").sort(true, false)])?
                .collect()
                .await?;
            let mut pages = Vec::new();
            for b in &pb {
                let c = b.column(0).as_primitive::<UInt64Type>();
                pages.extend((0..b.num_rows()).map(|i| c.value(i) << shift));
            }
            // Check the size before building the rows: tiny rows of many
            // pages would otherwise allocate first and refuse after.
            let n = if bpr <= page_size {
                pages.len() as u64 * (page_size / bpr)
            } else {
                (pages.len() as u64).div_ceil(bpr / page_size)
            };
            if n.saturating_mul(width as u64) > o.max_cells {
                return Err(Error::Usage(format!(
                    "{width} columns × {n} rows is too large an image: raise the instructions per column or bytes per row, or zoom"
                )));
            }
            let mut rows = Vec::with_capacity(n as usize);
            if bpr <= page_size {
                for p in &pages {
                    rows.extend((0..page_size / bpr).map(|k| (p + k * bpr, p + (k + 1) * bpr)));
                }
            } else {
                // Several used pages per row: the row spans from the first
                // one's start to the last one's end.
                let per = (bpr / page_size) as usize;
                for g in pages.chunks(per) {
                    rows.push((g[0], g[g.len() - 1] + page_size));
                }
            }
            (bpr, rows)
        }
        View::Full => {
            let (lo, hi) = o.addr.unwrap_or((amin, amax.max(amin + 1)));
            let bpr = o
                .bytes_per_row
                .unwrap_or_else(|| (hi - lo).div_ceil(1024).next_power_of_two().max(1));
            let lo = lo / bpr * bpr;
            let n = (hi - lo).div_ceil(bpr);
            if n.saturating_mul(width as u64) > o.max_cells || n > 1 << 20 {
                return Err(Error::Usage(format!(
                    "the full-range view of {lo:#x}..{hi:#x} at {bpr} bytes per row has {n} rows: choose more bytes per row, zoom with an address range, or use the used-pages view"
                )));
            }
            (
                bpr,
                (0..n).map(|k| (lo + k * bpr, lo + (k + 1) * bpr)).collect(),
            )
        }
    };
    let height = rows.len();
    if (height as u64).saturating_mul(width as u64) > o.max_cells {
        return Err(Error::Usage(format!(
            "{width} columns × {height} rows is too large an image: raise the instructions per column or bytes per row, or zoom"
        )));
    }
    let mut cells = vec![0u8; width * height];
    // Row of an address: used view searches the row starts; both views
    // then walk rows while the access continues.
    let starts: Vec<u64> = rows.iter().map(|r| r.0).collect();
    let row_of = |a: u64| -> Option<usize> {
        let i = starts.partition_point(|&s| s <= a);
        (i > 0 && a < rows[i - 1].1).then(|| i - 1)
    };
    let mut stream = accesses(s, &params).await?.execute_stream().await?;
    let mut accesses = 0u64;
    while let Some(b) = stream.next().await {
        let b = b?;
        let ord = b.column(0).as_primitive::<Int64Type>();
        let kind = crate::rows::string_values(b.column(1));
        let addr = b.column(2).as_primitive::<UInt64Type>();
        let size = b.column(3).as_primitive::<Int32Type>();
        for i in 0..b.num_rows() {
            let bits = match kind[i].as_deref() {
                Some("S") => STORE,
                Some("M") => LOAD | STORE,
                _ => LOAD,
            };
            let col = ((ord.value(i) - o0) as u64 / ipc) as usize;
            if col >= width {
                continue;
            }
            let a = addr.value(i);
            let end = a.saturating_add(size.value(i).max(1) as u64);
            let Some(mut r) = row_of(a) else { continue };
            accesses += 1;
            loop {
                cells[r * width + col] |= bits;
                r += 1;
                if r >= height || rows[r].0 >= end {
                    break;
                }
            }
        }
    }
    Ok(Heatmap {
        width,
        height,
        cells,
        rows,
        ordinal0: o0,
        instr_per_col: ipc,
        bytes_per_row: bpr,
        source_id,
        accesses,
    })
}

/// What the ordinals of memory-log input `source_id` of the first capture
/// count (`capture_meta.mem_x_axis`): `instruction`, or `access` for a
/// data-only log; `instruction` for captures written before it was said.
pub async fn x_axis(s: &Session, source_id: i32) -> Result<String> {
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let b = s
        .sql_with(
            "SELECT value FROM capture_meta WHERE capture = $cap AND source_id = $sid AND key = 'mem_x_axis'",
            &[
                ("cap", ScalarValue::from(cap.as_str())),
                ("sid", ScalarValue::Int32(Some(source_id))),
            ],
        )
        .await?
        .collect()
        .await?;
    Ok(b.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| crate::rows::string_values(b.column(0))[0].clone())
        .unwrap_or_else(|| "instruction".into()))
}

/// What each heatmap row holds: its mapped object and the symbol at (or
/// overlapping) its start, from `mem_map` / `mem_symbol`.
pub async fn row_labels(s: &Session, rows: &[(u64, u64)]) -> Result<Vec<(String, String)>> {
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let load = |q: &'static str| {
        let cap = cap.clone();
        async move {
            let b = s
                .sql_with(q, &[("cap", ScalarValue::from(cap.as_str()))])
                .await?
                .collect()
                .await?;
            let mut v: Vec<(u64, u64, String)> = Vec::new();
            for b in &b {
                let st = b.column(0).as_primitive::<UInt64Type>();
                let en = b.column(1).as_primitive::<UInt64Type>();
                let n = crate::rows::string_values(b.column(2));
                for i in 0..b.num_rows() {
                    v.push((st.value(i), en.value(i), n[i].clone().unwrap_or_default()));
                }
            }
            v.sort_by_key(|e| e.0);
            Ok::<_, Error>(v)
        }
    };
    let maps = load(
        "SELECT start_address, end_address, CASE WHEN path = '' THEN '[anon]' ELSE path END FROM mem_map WHERE capture = $cap",
    )
    .await?;
    let syms = load("SELECT start_address, end_address, name FROM mem_symbol WHERE capture = $cap")
        .await?;
    let find = |v: &[(u64, u64, String)], lo: u64, hi: u64| -> String {
        // The last entry starting before hi that ends after lo.
        let i = v.partition_point(|e| e.0 < hi);
        v[..i]
            .iter()
            .rev()
            .take(64)
            .find(|e| e.1 > lo)
            .map(|e| e.2.clone())
            .unwrap_or_default()
    };
    Ok(rows
        .iter()
        .map(|&(lo, hi)| (find(&maps, lo, hi), find(&syms, lo, hi)))
        .collect())
}

impl crate::choice::Choice for PageSort {
    const ALL: &'static [Self] = &[Self::Address, Self::Accesses, Self::First, Self::Touched];
    fn name(self) -> &'static str {
        match self {
            Self::Address => "address",
            Self::Accesses => "accesses",
            Self::First => "first",
            Self::Touched => "touched",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Address => "by capture, input and page address",
            Self::Accesses => "most accessed first",
            Self::First => "in order of first access",
            Self::Touched => "most bytes touched first",
        }
    }
}

impl crate::choice::Choice for View {
    const ALL: &'static [Self] = &[Self::Used, Self::Full];
    fn name(self) -> &'static str {
        match self {
            Self::Used => "used",
            Self::Full => "full",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Used => "only pages touched at least once (rows not contiguous)",
            Self::Full => "the whole address range (or --addr-range), contiguous",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(page: u64, first: i64, last: i64) -> Life {
        Life { page, first, last }
    }

    #[test]
    fn mibu_et_al_pages_a_b_c() {
        // a: phase 1; b: phase 2; c: phase 1 and 3 (before and after b).
        let (min, pairs, spanning, plan) =
            reuse_of(vec![l(0xa, 1, 10), l(0xb, 20, 30), l(0xc, 5, 40)]);
        assert_eq!(min, 2);
        // Only (a, b): c overlaps both.
        assert_eq!(pairs, 1);
        assert_eq!(spanning, 1);
        let shared: Vec<Vec<u64>> = plan
            .iter()
            .map(|s| s.iter().map(|x| x.page).collect())
            .collect();
        assert_eq!(shared, vec![vec![0xa, 0xb], vec![0xc]]);
    }

    #[test]
    fn touching_at_one_ordinal_overlaps() {
        let (min, pairs, _, _) = reuse_of(vec![l(1, 1, 5), l(2, 5, 9)]);
        assert_eq!((min, pairs), (2, 0));
    }
}
