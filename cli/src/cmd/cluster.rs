//! `trawl cluster scheduler` / `trawl cluster executor`: the processes of
//! a Ballista cluster that runs trawl's SQL (`--cluster df://HOST:PORT`).

use std::net::SocketAddr;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::session::runtime;

#[derive(Subcommand)]
pub(crate) enum Cluster {
    /// Run a scheduler: clients (`trawl sql --cluster df://HOST:PORT`)
    /// submit queries to it, executors register with it.
    Scheduler(SchedulerArgs),
    /// Run an executor: it registers with the scheduler and runs tasks;
    /// it reads captures at the paths clients name (a shared file system).
    Executor(ExecutorArgs),
}

#[derive(Args)]
pub(crate) struct SchedulerArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:50050", value_name = "HOST:PORT")]
    bind: SocketAddr,
    /// The host name executors and clients reach this scheduler by.
    #[arg(long, default_value = "localhost", value_name = "HOST")]
    external_host: String,
}

#[derive(Args)]
pub(crate) struct ExecutorArgs {
    /// The scheduler to register with.
    #[arg(long, default_value = "localhost:50050", value_name = "HOST:PORT")]
    scheduler: String,
    /// Address to bind the executor's services to.
    #[arg(long, default_value = "127.0.0.1", value_name = "HOST")]
    bind_host: String,
    /// The host name the scheduler and other executors reach this one by
    /// (default: the bind address).
    #[arg(long, value_name = "HOST")]
    external_host: Option<String>,
    /// Port of the Flight service (results and shuffle data).
    #[arg(long, default_value_t = 50051)]
    port: u16,
    /// Port of the gRPC service (tasks).
    #[arg(long, default_value_t = 50052)]
    grpc_port: u16,
    /// Tasks run at once (default: the cores).
    #[arg(long, short = 'j')]
    concurrency: Option<usize>,
    /// Directory for shuffle files (default: a temporary directory removed
    /// when the executor ends).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<PathBuf>,
}

pub(crate) fn cluster(c: Cluster) -> Result<()> {
    // Ballista's log (job and task events, failures): INFO unless RUST_LOG
    // says otherwise.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    match c {
        Cluster::Scheduler(a) => {
            eprintln!(
                "trawl cluster scheduler: listening on {} (clients: --cluster df://{}:{})",
                a.bind,
                a.external_host,
                a.bind.port()
            );
            runtime()?.block_on(trawl_cluster::server::scheduler(
                trawl_cluster::server::SchedulerOptions {
                    bind: a.bind,
                    external_host: a.external_host,
                },
            ))?;
            Ok(())
        }
        Cluster::Executor(a) => {
            let (host, port) = match a.scheduler.rsplit_once(':') {
                Some((h, p)) => (
                    h.to_string(),
                    p.parse::<u16>()
                        .with_context(|| format!("--scheduler {:?}: bad port", a.scheduler))?,
                ),
                None => (a.scheduler.clone(), 50050),
            };
            let concurrency = a
                .concurrency
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
            // Shuffle files: in a directory this process owns and removes
            // when it ends (Ballista's default is a temporary path nobody
            // removes).
            let own;
            let work_dir = match a.work_dir {
                Some(d) => d,
                None => {
                    own = tempfile::Builder::new()
                        .prefix("trawl-executor-")
                        .tempdir()
                        .context("creating the executor's work directory")?;
                    own.path().to_path_buf()
                }
            };
            eprintln!(
                "trawl cluster executor: ports {} (flight) and {} (grpc), {concurrency} tasks at once, scheduler {host}:{port}, shuffle files in {}",
                a.port,
                a.grpc_port,
                work_dir.display()
            );
            runtime()?.block_on(trawl_cluster::server::executor(
                trawl_cluster::server::ExecutorOptions {
                    scheduler_host: host,
                    scheduler_port: port,
                    bind_host: a.bind_host,
                    external_host: a.external_host,
                    port: a.port,
                    grpc_port: a.grpc_port,
                    concurrency,
                    work_dir: Some(work_dir.to_string_lossy().into_owned()),
                },
            ))?;
            Ok(())
        }
    }
}
