//! What a session holds when it opens: the stored tables of its
//! captures, an archive's manifest, the derived tables and views, and every
//! analysis (SQL table functions, UDFs). Adding an analysis means listing
//! its module here: [`specs`] for its table functions, [`Session::open_in`]
//! for the derived tables it registers.

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::prelude::*;

use crate::captures::find_captures;
use crate::clock::Origin;
use crate::error::Result;
use crate::session::{session_config, Session, Shared};
use crate::tables::stored_table_in;
use crate::{
    assert_true, cause, clock, energy, functions, io, lbr, memlog, power, power_calls, ranges,
    regions, stack_cost, stacks, time, tracepoint,
};

impl Session {
    /// Opens the captures named by `args` (see [`find_captures`]). Every
    /// table has a leading `capture` column; tables a capture lacks are
    /// empty.
    pub async fn open(args: &[PathBuf]) -> Result<Session> {
        Self::open_at(args, &Origin::default()).await
    }

    /// [`Session::open`], with relative times (`t_ns`) counted from
    /// `origin` in each capture.
    pub async fn open_at(args: &[PathBuf], origin: &Origin) -> Result<Session> {
        Self::open_in(args, origin, |config| {
            let state = datafusion::execution::SessionStateBuilder::new()
                .with_config(config)
                .with_runtime_env(crate::cloud::runtime()?)
                .with_default_features()
                .with_physical_optimizer_rule(Arc::new(crate::dict_count::DictCountRule))
                .build();
            Ok(SessionContext::new_with_state(state))
        })
        .await
    }

    /// [`Session::open_at`] in the context `make` builds from trawl's
    /// settings ([`session_config`]): a Ballista client's context, for one
    /// (trawl-cluster), whose queries then run on a cluster.
    pub async fn open_in(
        args: &[PathBuf],
        origin: &Origin,
        make: impl FnOnce(SessionConfig) -> Result<SessionContext>,
    ) -> Result<Session> {
        let captures = find_captures(args)?;
        let ctx = make(session_config()?)?;
        // The object stores of captures not on a local disk.
        let mut roots: Vec<&str> = captures
            .iter()
            .filter_map(|c| c.remote.as_ref().map(|r| r.at.root.as_str()))
            .collect();
        roots.dedup();
        for root in roots {
            let store = crate::cloud::bucket_store(root).map_err(crate::Error::Usage)?;
            let url = datafusion::execution::object_store::ObjectStoreUrl::parse(root)?;
            ctx.register_object_store(url.as_ref(), store);
        }
        let segments = crate::captures::segments(&captures);
        for def in trawl_capture::schema::TABLES {
            // The flat table is a view over the others (its files, written
            // by `ingest --flat`, are for readers without trawl).
            if def.name == trawl_capture::schema::PERF_SAMPLE_SYMBOLIZED.name {
                continue;
            }
            ctx.register_table(
                def.name,
                Arc::new(stored_table_in(&captures, &segments, def)),
            )?;
        }
        let mut manifests: Vec<String> = captures
            .iter()
            .filter_map(|c| c.remote.as_ref()?.archive.clone())
            .collect();
        manifests.dedup();
        let s = Session {
            ctx,
            shared: Arc::new(Shared {
                captures,
                origin: origin.clone(),
                times: tokio::sync::OnceCell::new(),
                code: Default::default(),
                memo: Default::default(),
                segment_of: Default::default(),
            }),
        };
        for f in scalar_udfs() {
            s.ctx.register_udf(f);
        }
        for f in aggregate_udfs() {
            s.ctx.register_udaf(f);
        }
        // An archive's manifest (`capture`, `capture_input` at its root),
        // with its declared schema: nothing is read until a query does;
        // empty for plain capture directories.
        for def in trawl_capture::schema::ARCHIVE {
            use datafusion::datasource::file_format::parquet::ParquetFormat;
            use datafusion::datasource::listing::{
                ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
            };
            let urls = args
                .iter()
                .filter(|a| !trawl_capture::cloud::is_url(a))
                .filter_map(|a| {
                    let p = trawl_capture::layout::table_file(a, def.name);
                    let p = p
                        .is_file()
                        .then(|| std::fs::canonicalize(&p).unwrap_or(p))?;
                    Some(p.to_string_lossy().into_owned())
                })
                // Archives in object stores whose manifest was read.
                .chain(
                    manifests
                        .iter()
                        .map(|a| format!("{a}/{}.parquet", def.name)),
                )
                .map(ListingTableUrl::parse)
                .collect::<datafusion::error::Result<Vec<_>>>()?;
            let schema = datafusion::arrow::datatypes::Schema::new(
                def.columns
                    .iter()
                    .map(|c| {
                        datafusion::arrow::datatypes::Field::new(
                            c.name,
                            c.ty.data_type(),
                            c.nullable,
                        )
                    })
                    .collect::<Vec<_>>(),
            );
            let schema = Arc::new(schema);
            let table: Arc<dyn datafusion::catalog::TableProvider> = if urls.is_empty() {
                Arc::new(datafusion::datasource::MemTable::try_new(
                    schema,
                    vec![vec![]],
                )?)
            } else {
                let config = ListingTableConfig::new_with_multi_paths(urls)
                    .with_listing_options(ListingOptions::new(Arc::new(ParquetFormat::default())))
                    .with_schema(schema);
                Arc::new(ListingTable::try_new(config)?)
            };
            s.ctx.register_table(def.name, table)?;
        }
        time::register(&s).await?;
        s.define_views(stacks::FRAME_NAME).await?;
        s.define_views(stacks::SAMPLE_SYMBOLIZED).await?;
        s.define_views(stacks::STACK_WEIGHT).await?;
        s.define_views(stacks::HOTSPOT_KEY_VIEW).await?;
        s.define_views(stacks::THREAD_STATE).await?;
        s.ctx.register_table(
            stack_cost::NAME,
            Arc::new(stack_cost::table(
                &functions::unbound(&stacks::HOTSPOTS)?,
                &s.shared,
            )),
        )?;
        functions::register(&s, stacks::SPECS).await?;
        s.ctx.register_table(
            tracepoint::pairs::TABLE,
            Arc::new(datafusion::datasource::MemTable::try_new(
                tracepoint::pairs::schema(),
                vec![vec![]],
            )?),
        )?;
        functions::register(&s, tracepoint::SPECS).await?;
        lbr::register(&s).await?;
        regions::register(&s).await?;
        io::register(&s).await?;
        memlog::register(&s).await?;
        ranges::register(&s).await?;
        power_calls::register(&s).await?;
        energy::register(&s).await?;
        cause::register(&s).await?;
        Ok(s)
    }
}

/// trawl's scalar functions (`assert_true`, `window_start`,
/// `tracepoint_field`): registered in
/// every session, and what a cluster's processes decode by name.
pub fn scalar_udfs() -> Vec<datafusion::logical_expr::ScalarUDF> {
    vec![
        assert_true::udf(),
        clock::window_start_udf(),
        tracepoint::field::udf(),
    ]
}

/// trawl's aggregate functions (`power_fit`).
pub fn aggregate_udfs() -> Vec<datafusion::logical_expr::AggregateUDF> {
    vec![power::udaf()]
}

/// Every analysis served as a SQL table function, by area: the stack
/// analyses, LBR, memory and I/O from traced calls, memory logs, energy,
/// exhaustion causes.
pub fn specs() -> Vec<&'static functions::Spec> {
    [
        stacks::SPECS,
        tracepoint::SPECS,
        lbr::SPECS,
        regions::SPECS,
        io::SPECS,
        memlog::SPECS,
        energy::SPECS,
        cause::SPECS,
        power_calls::SPECS,
    ]
    .concat()
}

/// Every report (`trawl report NAME`), in the order help lists them: the
/// stack analyses' (hotspots first), tracepoints', traced calls', the
/// memory log's, LBR, energy and power.
pub fn reports() -> Vec<&'static crate::report::Report> {
    [
        stacks::REPORTS,
        tracepoint::REPORTS,
        regions::REPORTS,
        io::REPORTS,
        memlog::REPORTS,
        lbr::REPORTS,
        energy::REPORTS,
        power_calls::REPORTS,
    ]
    .concat()
}

/// The report named `name`.
pub fn report(name: &str) -> Option<&'static crate::report::Report> {
    reports().into_iter().find(|r| r.name == name)
}
