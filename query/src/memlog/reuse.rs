//! Page reuse (Mibu et al.): pages whose lifetimes do not overlap can share
//! one physical page; a sweep over the lifetimes in first-access order, and
//! the `_page_reuse` and `_page_reuse_plan` tables it fills.

use super::*;

/// `_page_reuse` and `_page_reuse_plan` for the call's page size.
pub(super) fn reuse_inputs(
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

pub(super) fn reuse_schema() -> datafusion::arrow::datatypes::SchemaRef {
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

pub(super) fn plan_schema() -> datafusion::arrow::datatypes::SchemaRef {
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
