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

mod heatmap;
mod reuse;
pub use heatmap::*;
pub use reuse::*;
use reuse::{plan_schema, reuse_inputs, reuse_schema};

use datafusion::scalar::ScalarValue;

pub const SYMBOL_USE: &str = include_str!("../../analyses/memlog/symbol_use.sql");
pub const OBJECT_USE: &str = include_str!("../../analyses/memlog/object_use.sql");
pub const REUSE_PAIR: &str = include_str!("../../analyses/memlog/reuse_pair.sql");
/// The view `_page`: `mem_page` at a page size of the caller's choice.
pub const PAGE: &str = include_str!("../../analyses/memlog/page.sql");

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
    sql: include_str!("../../analyses/memlog/pages.sql"),
    positional: 1,
    params: &[PAGE_SIZE],
    columns: None,
    inputs: None,
};

/// `page_reuse_pairs(page_size)`.
pub static PAGE_REUSE_PAIRS: Spec = Spec {
    name: "page_reuse_pairs",
    doc: "Pairs of pages whose lifetimes do not overlap, so one physical page could hold both (Mibu et al.).",
    sql: include_str!("../../analyses/memlog/page_reuse_pairs.sql"),
    positional: 1,
    params: &[PAGE_SIZE],
    columns: None,
    inputs: None,
};

/// `mem_symbols(...)`.
pub static MEM_SYMBOLS: Spec = Spec {
    name: "mem_symbols",
    doc: "Functions executed and data objects touched, and those never used (Mibu et al.).",
    sql: include_str!("../../analyses/memlog/mem_symbols.sql"),
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

/// Column `c` of the first row of a query result, as i64.
fn first_i64(b: &[RecordBatch], c: usize) -> Option<i64> {
    b.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| crate::rows::i64_at(b, c, 0))
}

/// What `trawl report page-reuse` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReuseShow {
    Summary,
    Plan,
    Pairs,
}

impl crate::choice::Choice for ReuseShow {
    const ALL: &'static [Self] = &[Self::Summary, Self::Plan, Self::Pairs];
    fn name(self) -> &'static str {
        match self {
            Self::Summary => "summary",
            Self::Plan => "plan",
            Self::Pairs => "pairs",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Summary => "pages, the fewest pages needed, saving, pairs",
            Self::Plan => "which pages can share one physical page, in order of use",
            Self::Pairs => "the pairs (a, b) where a is never touched after b's first touch",
        }
    }
}

use crate::report::{Answer, Captures, Given, Opt, Report, Selects};
use futures::future::BoxFuture;

/// The memory log reports.
pub static REPORTS: &[&Report] = &[
    &PAGES_REPORT,
    &PAGE_REUSE_REPORT,
    &MEM_SYMBOLS_REPORT,
    &MEM_OBJECTS_REPORT,
];

const PAGE_SIZE_DOC: &str = "Page size: a multiple of the one the capture was ingested with.";

/// `trawl report pages`.
pub static PAGES_REPORT: Report = Report {
    name: "pages",
    about: "Pages of a memory log (lackey, binary) touched at least once, with accesses per kind, bytes touched and lifetime (first and last instruction ordinal).",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::bytes("page_size", PAGE_SIZE_DOC),
            Opt::choice::<PageSort>("sort", "The order of the pages.").default("address"),
        ]
    },
    selects: Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, g| {
        Box::pin(async move {
            let sort = g.choice::<PageSort>("sort")?.unwrap_or(PageSort::Address);
            Ok(Answer::rows(pages(s, g.bytes("page_size")?, sort).await?))
        })
    },
};

/// `trawl report page-reuse`.
pub static PAGE_REUSE_REPORT: Report = Report {
    name: "page-reuse",
    about: "Pages of a memory log whose lifetimes do not overlap could share one physical page: the fewest pages needed (most pages live at once), the saving, the sharing plan or the pairs (Mibu et al.).",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::bytes("page_size", PAGE_SIZE_DOC),
            Opt::choice::<ReuseShow>("show", "What to show.").default("summary"),
        ]
    },
    selects: Selects::Nothing,
    t0: false,
    limit: true,
    run: run_page_reuse,
};

fn run_page_reuse<'a>(s: &'a Session, g: &'a Given) -> BoxFuture<'a, Result<Answer>> {
    Box::pin(async move {
        let page_size = g.bytes("page_size")?;
        let df = match g.choice::<ReuseShow>("show")?.unwrap_or(ReuseShow::Summary) {
            ReuseShow::Pairs => reuse_pairs(s, page_size).await?,
            ReuseShow::Summary => reuse(s, page_size, false).await?,
            ReuseShow::Plan => reuse(s, page_size, true).await?,
        };
        Ok(Answer::rows(df))
    })
}

/// `trawl report mem-symbols`.
pub static MEM_SYMBOLS_REPORT: Report = Report {
    name: "mem-symbols",
    about: "Functions and data objects of the mapped files (a saved /proc/PID/maps ingested with the memory log): executed / touched or never.",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::choice::<SymbolKind>("kind", "Only functions or only data objects."),
            Opt::text("object", "Only objects whose path contains this."),
            Opt::flag("never", "Only symbols never executed / never touched."),
        ]
    },
    selects: Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, g| {
        Box::pin(async move {
            let kind = g.choice::<SymbolKind>("kind")?;
            Ok(Answer::rows(
                symbols(s, kind, g.text("object"), g.flag("never")).await?,
            ))
        })
    },
};

/// `trawl report mem-objects`.
pub static MEM_OBJECTS_REPORT: Report = Report {
    name: "mem-objects",
    about: "Per mapped object: pages mapped, touched and never touched; functions executed and never executed; data objects touched.",
    captures: Captures::Many,
    opts: Vec::new,
    selects: Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, _| Box::pin(async move { Ok(Answer::rows(objects(s).await?)) }),
};
