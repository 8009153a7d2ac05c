//! blocklab coordinator: gRPC services, scheduler, SQLite catalog, and the CLI's logic.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use blocklab_proto::security::{self, Secret, ServerTls, TokenCheck, TokenKind};
use blocklab_proto::v1::control_server::ControlServer;
use blocklab_proto::v1::fleet_server::FleetServer;
use tokio::net::TcpListener;
use tonic::service::interceptor::InterceptedService;

pub mod catalog;
pub mod cli;
pub mod control;
pub mod fleet;
pub mod listen;
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
    /// Serve TLS with this certificate and key (`--tls-cert`, `--tls-key`).
    pub tls: Option<ServerTls>,
    /// Agents and workers must present this token on `Fleet` (`--fleet-token-file`).
    pub fleet_token: Option<Secret>,
    /// The CLI must present one of these on `Control` (`--api-token-file`); empty = open.
    pub api_tokens: Vec<Secret>,
}

impl CoordinatorConfig {
    pub fn new(catalog_path: impl Into<PathBuf>) -> Self {
        Self {
            catalog_path: catalog_path.into(),
            heartbeat_interval: Duration::from_secs(2),
            heartbeat_timeout: Duration::from_secs(10),
            tls: None,
            fleet_token: None,
            api_tokens: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    #[error(transparent)]
    Catalog(#[from] catalog::CatalogError),
    #[error("grpc server: {}", security::error_chain(.0))]
    Transport(#[from] tonic::transport::Error),
    #[error("TLS configuration (--tls-cert, --tls-key): {0}")]
    Tls(String),
}

/// Opens the catalog, resumes unfinished jobs, and serves `Control` and `Fleet` on
/// `listener` until `shutdown` resolves.
pub async fn serve(
    config: CoordinatorConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()>,
) -> Result<(), CoordinatorError> {
    // A bad certificate or key fails here, before anything else starts.
    // HTTP/2 keepalives close connections to hosts whose link died, so their streams end.
    let mut server = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(config.heartbeat_interval))
        .http2_keepalive_timeout(Some(config.heartbeat_timeout));
    if let Some(tls) = &config.tls {
        server = server
            .tls_config(tls.tonic_config())
            .map_err(|e| CoordinatorError::Tls(security::error_chain(&e)))?;
    }
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
    tracing::info!(
        addr = ?addr,
        catalog = %config.catalog_path.display(),
        tls = config.tls.is_some(),
        fleet_token = config.fleet_token.is_some(),
        api_tokens = config.api_tokens.len(),
        "coordinator listening"
    );
    let control = control::ControlService {
        scheduler,
        catalog_path: config.catalog_path.display().to_string(),
    };
    let fleet = fleet::FleetService { registry, catalog };
    let control = InterceptedService::new(
        ControlServer::new(control).max_decoding_message_size(security::CONTROL_MAX_MESSAGE_BYTES),
        TokenCheck::new(TokenKind::Api, &config.api_tokens),
    );
    let fleet_tokens: Vec<Secret> = config.fleet_token.iter().cloned().collect();
    let fleet = InterceptedService::new(
        FleetServer::new(fleet).max_decoding_message_size(security::FLEET_MAX_MESSAGE_BYTES),
        TokenCheck::new(TokenKind::Fleet, &fleet_tokens),
    );
    let result = server
        .add_service(control)
        .add_service(fleet)
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::TcpListenerStream::new(listener),
            shutdown,
        )
        .await;
    reaper.abort();
    Ok(result?)
}
