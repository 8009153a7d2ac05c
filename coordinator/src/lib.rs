//! blocklab coordinator: gRPC services, scheduler, SQLite catalog, and the CLI's logic.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use blocklab_proto::v1::control_server::ControlServer;
use blocklab_proto::v1::fleet_server::FleetServer;
use tokio::net::TcpListener;

pub mod catalog;
pub mod cli;
pub mod control;
pub mod fleet;
pub mod merge;
mod probe;
pub mod report;
mod run;
pub mod scheduler;
pub mod spec;
pub mod stats;

/// How the coordinator runs.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub catalog_path: PathBuf,
    pub heartbeat_interval: Duration,
    pub heartbeat_timeout: Duration,
}

impl CoordinatorConfig {
    pub fn new(catalog_path: impl Into<PathBuf>) -> Self {
        Self {
            catalog_path: catalog_path.into(),
            heartbeat_interval: Duration::from_secs(2),
            heartbeat_timeout: Duration::from_secs(10),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    #[error("grpc server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Opens the catalog, resumes unfinished jobs, and serves `Control` and `Fleet` on
/// `listener` until `shutdown` resolves.
pub async fn serve(
    config: CoordinatorConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), CoordinatorError> {
    let catalog = catalog::Catalog::open(&config.catalog_path).await?;
    let registry = fleet::Registry::new(fleet::Liveness {
        heartbeat_interval: config.heartbeat_interval,
        heartbeat_timeout: config.heartbeat_timeout,
    });
    let scheduler = scheduler::Scheduler::new(catalog.clone(), registry.clone());
    scheduler.follow_progress();
    let requeued = catalog.requeue_interrupted().await?;
    for job_id in catalog.unfinished_jobs().await? {
        tracing::info!(job_id = %job_id, requeued, "resuming job");
        scheduler.start_job(job_id);
    }
    let reaper_registry = registry.clone();
    let reaper = tokio::spawn(async move {
        loop {
            tokio::time::sleep(reaper_registry.liveness.heartbeat_interval).await;
            reaper_registry.reap();
        }
    });
    let addr = listener.local_addr().ok();
    tracing::info!(addr = ?addr, catalog = %config.catalog_path.display(), "coordinator listening");
    let control = control::ControlService {
        scheduler,
        catalog_path: config.catalog_path.display().to_string(),
    };
    let fleet = fleet::FleetService { registry, catalog };
    let result = tonic::transport::Server::builder()
        .add_service(ControlServer::new(control))
        .add_service(FleetServer::new(fleet))
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            shutdown,
        )
        .await;
    reaper.abort();
    Ok(result?)
}
