//! `trawl report page-reuse`: the pages one physical page could hold.

use crate::*;

#[derive(Args)]
pub(crate) struct PageReuseArgs {
    /// Capture with a memory log.
    pub(crate) captures: Vec<PathBuf>,
    /// Page size: a multiple of the one the capture was ingested with.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) page_size: Option<u64>,
    /// `summary`: pages, the fewest pages needed, saving, pairs; `plan`:
    /// which pages can share one physical page, in order of use; `pairs`:
    /// the pairs (a, b) where a is never touched after b's first touch.
    #[arg(long, value_enum, default_value = "summary")]
    pub(crate) show: ReuseShow,
    /// Show at most N rows (plan, pairs).
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum ReuseShow {
    Summary,
    Plan,
    Pairs,
}

pub(crate) async fn report_page_reuse(a: PageReuseArgs) -> Result<()> {
    use std::sync::Arc;
    use trawl_query::datafusion::arrow::array::{
        ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray,
    };
    let s = Session::open(&a.captures).await?;
    if a.show == ReuseShow::Pairs {
        let df = trawl_query::memlog::reuse_pairs(&s, a.page_size).await?;
        return output::write(&limited(df, a.limit).await?, &a.out);
    }
    let reuse = trawl_query::memlog::page_reuse(&s, a.page_size).await?;
    if reuse.is_empty() {
        bail!("no memory log in the captures: ingest a lackey or binary memory log first");
    }
    let batch = if a.show == ReuseShow::Summary {
        let col_s = |f: &dyn Fn(&trawl_query::memlog::Reuse) -> String| -> ArrayRef {
            Arc::new(StringArray::from(reuse.iter().map(f).collect::<Vec<_>>()))
        };
        let col_i = |f: &dyn Fn(&trawl_query::memlog::Reuse) -> i64| -> ArrayRef {
            Arc::new(Int64Array::from(reuse.iter().map(f).collect::<Vec<_>>()))
        };
        RecordBatch::try_from_iter(vec![
            ("capture", col_s(&|r| r.capture.clone())),
            (
                "source_id",
                Arc::new(Int32Array::from(
                    reuse.iter().map(|r| r.source_id).collect::<Vec<_>>(),
                )) as ArrayRef,
            ),
            ("page_size", col_i(&|r| r.page_size as i64)),
            ("pages", col_i(&|r| r.pages as i64)),
            ("min_pages", col_i(&|r| r.min_pages as i64)),
            ("saving_pages", col_i(&|r| r.saving_pages() as i64)),
            (
                "saving_bytes",
                col_i(&|r| (r.saving_pages() as u64 * r.page_size) as i64),
            ),
            ("pairs", col_i(&|r| r.pairs as i64)),
            ("spanning_pages", col_i(&|r| r.spanning as i64)),
        ])?
    } else {
        let (mut cap, mut sid, mut slot, mut order, mut page, mut first, mut last) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        for r in &reuse {
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
        RecordBatch::try_from_iter(vec![
            ("capture", Arc::new(StringArray::from(cap)) as ArrayRef),
            ("source_id", Arc::new(Int32Array::from(sid)) as ArrayRef),
            (
                "physical_page",
                Arc::new(Int64Array::from(slot)) as ArrayRef,
            ),
            ("order", Arc::new(Int64Array::from(order)) as ArrayRef),
            ("page", Arc::new(StringArray::from(page)) as ArrayRef),
            (
                "first_ordinal",
                Arc::new(Int64Array::from(first)) as ArrayRef,
            ),
            ("last_ordinal", Arc::new(Int64Array::from(last)) as ArrayRef),
        ])?
    };
    let batch = match a.limit {
        Some(n) if n < batch.num_rows() => batch.slice(0, n),
        _ => batch,
    };
    output::write(&[batch], &a.out)
}
