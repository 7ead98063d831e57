//! The cluster's processes: Ballista's scheduler and executor, with
//! trawl's codecs ([`crate::codec`]), so that trawl's tables and functions
//! can be planned and run on them.

use std::net::SocketAddr;
use std::sync::Arc;

use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{start_executor_process, ExecutorProcessConfig};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;

use datafusion::execution::SessionStateBuilder;

use crate::codec::{LogicalCodec, PhysicalCodec};

/// A scheduler's settings.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// Where its gRPC service listens (clients and executors connect here).
    pub bind: SocketAddr,
    /// The host name executors and clients reach it by.
    pub external_host: String,
}

/// Runs a scheduler until the process ends.
pub async fn scheduler(o: SchedulerOptions) -> Result<(), ballista_core::error::BallistaError> {
    let config = SchedulerConfig {
        bind_host: o.bind.ip().to_string(),
        bind_port: o.bind.port(),
        external_host: o.external_host,
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(PhysicalCodec::default())),
        // Plans name buckets; the scheduler reaches them with its own
        // settings should DataFusion ask for a store.
        override_session_builder: Some(Arc::new(|config| {
            let state = ballista_core::utils::default_session_builder(config)?;
            Ok(SessionStateBuilder::new_from_existing(state)
                .with_runtime_env(trawl_query::cloud::runtime()?)
                .build())
        })),
        ..Default::default()
    };
    let cluster = BallistaCluster::new_from_config(&config).await?;
    start_server(cluster, o.bind, Arc::new(config)).await
}

/// The functions an executor resolves by name: every function of a
/// DataFusion session (Ballista 55's default registry lacks the nested
/// ones, e.g. `range`, which the analyses use) and trawl's.
fn functions() -> BallistaFunctionRegistry {
    let state = SessionStateBuilder::new().with_default_features().build();
    let mut r = BallistaFunctionRegistry::from(&state);
    for f in trawl_query::scalar_udfs() {
        r.scalar_functions.insert(f.name().to_string(), Arc::new(f));
    }
    for f in trawl_query::aggregate_udfs() {
        r.aggregate_functions
            .insert(f.name().to_string(), Arc::new(f));
    }
    r
}

/// An executor's settings.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    pub scheduler_host: String,
    pub scheduler_port: u16,
    /// The address its Flight service (results, shuffles) binds to.
    pub bind_host: String,
    /// The host name the scheduler and other executors reach it by.
    pub external_host: Option<String>,
    /// Flight port (results and shuffle data).
    pub port: u16,
    /// gRPC port (tasks).
    pub grpc_port: u16,
    /// Tasks run at once.
    pub concurrency: usize,
    /// Where shuffle files go (a temporary directory when not given).
    pub work_dir: Option<String>,
}

/// Runs an executor until the process ends.
pub async fn executor(o: ExecutorOptions) -> Result<(), ballista_core::error::BallistaError> {
    let work_dir = o.work_dir.clone();
    let config = ExecutorProcessConfig {
        scheduler_host: o.scheduler_host,
        scheduler_port: o.scheduler_port,
        bind_host: o.bind_host,
        external_host: o.external_host,
        port: o.port,
        grpc_port: o.grpc_port,
        vcores: o.concurrency.max(1),
        work_dir: o.work_dir,
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(PhysicalCodec::default())),
        override_function_registry: Some(Arc::new(functions())),
        // Buckets reached with the executor's own settings.
        override_runtime_producer: Some(Arc::new(move |_| {
            let mut b = datafusion::execution::runtime_env::RuntimeEnvBuilder::new()
                .with_object_store_registry(Arc::new(trawl_query::cloud::EnvStores::default()));
            if let Some(wd) = &work_dir {
                b = b.with_temp_file_path(wd);
            }
            Ok(Arc::new(b.build()?))
        })),
        ..Default::default()
    };
    start_executor_process(Arc::new(config)).await
}
