//! blocklab coordinator: gRPC services, scheduler, the catalog (SQLite or PostgreSQL), leader
//! election among coordinators sharing a PostgreSQL catalog.

use std::future::Future;
use std::time::Duration;

use blocklab_daemon::security::{self, ApiToken, Secret, ServerTls, TokenCheck};
use tokio::net::TcpListener;

pub mod access;
pub mod catalog;
pub mod control;
pub mod dashboard;
pub mod enrollment;
pub mod error;
pub mod fleet;
/// The Fleet fuzz target's body (`fuzz/`), built only with the `fuzzing` feature.
#[cfg(feature = "fuzzing")]
pub use fleet::fuzzing;
pub mod leader;
pub mod listen;
pub mod pilot;
pub mod prometheus;
pub mod results;
pub mod scheduler;

/// How often the hosts' `last_seen` is written to the catalog (liveness itself is in memory).
const LIVENESS_FLUSH: std::time::Duration = std::time::Duration::from_secs(10);
/// How long a shutdown waits for open connections to close before it stops anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// How the coordinator runs.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// Where the catalog lives (`--catalog`): a SQLite file or a PostgreSQL URL.
    pub catalog: catalog::Location,
    pub heartbeat_interval: Duration,
    pub heartbeat_timeout: Duration,
    /// Serve TLS with this certificate and key (`--tls-cert`, `--tls-key`).
    pub tls: Option<ServerTls>,
    /// Agents and workers must present this token on `Fleet` (`--fleet-token-file`).
    pub fleet_token: Option<Secret>,
    /// The CLI must present one of these on `Control` (`--api-token-file`), with the scope
    /// the RPC needs (`access.rs`); empty = open.
    pub api_tokens: Vec<ApiToken>,
    /// Serve the read-only web dashboard and `/metrics` here (`--dashboard-listen`); off if
    /// unset.
    pub dashboard: Option<std::net::SocketAddr>,
    /// The address hosts and the CLI reach this coordinator at, as the leader lease names it
    /// (`--advertise-addr`); the listener's address if unset.
    pub advertise: Option<String>,
    /// How long a leader's lease lasts unless renewed (`--lease-ttl`; PostgreSQL catalogs):
    /// a standby takes over at most this long after the leader died.
    pub lease_ttl: Duration,
}

impl CoordinatorConfig {
    pub fn new(catalog: impl Into<catalog::Location>) -> Self {
        Self {
            catalog: catalog.into(),
            heartbeat_interval: Duration::from_secs(2),
            heartbeat_timeout: Duration::from_secs(10),
            tls: None,
            fleet_token: None,
            api_tokens: Vec::new(),
            dashboard: None,
            advertise: None,
            lease_ttl: Duration::from_secs(10),
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
    #[error("stopped leading: {0}")]
    LeadLost(#[from] leader::LeadLost),
    #[error("--dashboard-listen {addr}: {source}")]
    Dashboard {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// Opens the catalog, resumes unfinished jobs, and serves `Control` and `Fleet` on
/// `listener` until `shutdown` resolves.
pub async fn serve(
    config: CoordinatorConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), CoordinatorError> {
    serve_boxed(config, listener, Box::pin(shutdown)).await
}

async fn serve_boxed(
    config: CoordinatorConfig,
    listener: TcpListener,
    shutdown: blocklab_daemon::Shutdown<'_>,
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
    // One coordinator per SQLite file: a second one stops here, naming the first.
    let _catalog_lock = match &config.catalog {
        catalog::Location::Sqlite(path) => Some(catalog::lock::lock(path)?),
        catalog::Location::Postgres(_) => None,
    };
    let catalog = catalog::Catalog::connect(&config.catalog).await?;
    let addr = listener.local_addr().ok();
    let advertised = config
        .advertise
        .clone()
        .or_else(|| addr.map(|a| a.to_string()))
        .unwrap_or_default();
    // Coordinators may share a PostgreSQL catalog: there they elect a leader, and every write
    // is fenced by the lease's epoch. A SQLite catalog has one coordinator, which leads.
    let shared = catalog.backend() == catalog::Backend::Postgres;
    let catalog = if shared {
        catalog.fence(&advertised)
    } else {
        catalog
    };
    let registry = fleet::Registry::new(fleet::Liveness {
        heartbeat_interval: config.heartbeat_interval,
        heartbeat_timeout: config.heartbeat_timeout,
    });
    let scheduler = scheduler::Scheduler::new(catalog.clone(), registry.clone());
    scheduler.follow_progress();
    if config.dashboard.is_some() {
        scheduler.keep_pages(config.catalog.to_string());
    }
    let (role_tx, role) = tokio::sync::watch::channel(if shared {
        leader::Role::Standby { leader: None }
    } else {
        leader::Role::Leader { epoch: 0 }
    });
    let (lost_tx, lost_rx) = tokio::sync::oneshot::channel::<leader::LeadLost>();
    let election = if shared {
        let (catalog, scheduler, mut leading) = (catalog.clone(), scheduler.clone(), role.clone());
        let ttl = config.lease_ttl;
        Some(tokio::spawn(async move {
            let elect = leader::elect(catalog.clone(), ttl, role_tx);
            tokio::pin!(elect);
            tokio::select! {
                lost = &mut elect => { let _ = lost_tx.send(lost); return; }
                _ = leading.wait_for(leader::Role::is_leader) => {}
            }
            if let Err(e) = resume(&catalog, &scheduler).await {
                tracing::error!(error = %e, "cannot resume the catalog's jobs as the new leader");
            }
            let _ = lost_tx.send(elect.await);
        }))
    } else {
        drop(lost_tx);
        resume(&catalog, &scheduler).await?;
        None
    };
    let reaper_registry = registry.clone();
    let reaper = tokio::spawn(async move {
        loop {
            tokio::time::sleep(reaper_registry.liveness.heartbeat_interval).await;
            reaper_registry.reap();
        }
    });
    // The hosts' last_seen, in one write for all of them (liveness itself is in memory).
    let flush_registry = registry.clone();
    let flush_catalog = catalog.clone();
    let closing_catalog = catalog.clone();
    let flush_role = role.clone();
    let flusher = tokio::spawn(async move {
        loop {
            tokio::time::sleep(LIVENESS_FLUSH).await;
            if !flush_role.borrow().is_leader() {
                continue;
            }
            let up: Vec<String> = flush_registry
                .up()
                .iter()
                .map(|s| s.host_id.clone())
                .collect();
            if let Err(e) = flush_catalog.touch_hosts(&up).await {
                tracing::warn!(error = %e, hosts = up.len(), "cannot record when hosts were last seen");
            }
        }
    });
    tracing::info!(
        addr = ?addr,
        advertised = %advertised,
        shared,
        catalog = %config.catalog,
        tls = config.tls.is_some(),
        fleet_token = config.fleet_token.is_some(),
        api_tokens = config.api_tokens.len(),
        "coordinator listening"
    );
    let dashboard = match config.dashboard {
        Some(addr) => {
            let listener = TcpListener::bind(addr)
                .await
                .map_err(|source| CoordinatorError::Dashboard { addr, source })?;
            let board = dashboard::Dashboard::new(
                catalog.clone(),
                registry.clone(),
                config.catalog.to_string(),
                &config.api_tokens,
            );
            let tls = config.tls.clone();
            Some(tokio::spawn(async move {
                let served =
                    dashboard::serve(board, listener, tls.as_ref(), std::future::pending()).await;
                if let Err(e) = served {
                    tracing::error!(error = %e, "dashboard stopped");
                }
            }))
        }
        None => None,
    };
    let control = control::ControlService {
        scheduler,
        catalog_path: config.catalog.to_string(),
        role: role.clone(),
    };
    let closing_registry = registry.clone();
    let lost = std::sync::Arc::new(std::sync::OnceLock::<leader::LeadLost>::new());
    let lost_store = lost.clone();
    let (stopping_tx, mut stopping_rx) = tokio::sync::watch::channel(false);
    let fleet_tokens: Vec<Secret> = config.fleet_token.iter().cloned().collect();
    let enforcer = tokio::spawn(fleet::enforce_credentials(
        registry.clone(),
        catalog.clone(),
        config.heartbeat_interval,
    ));
    let fleet = fleet::FleetService {
        registry,
        catalog,
        shared: TokenCheck::fleet(&fleet_tokens),
        role,
    };
    let control =
        access::ScopeGate::new(control.into_server(), TokenCheck::api(&config.api_tokens));
    // Fleet's credentials are checked by the Attach handler before it reads the hello
    // (`fleet/identity.rs`): enrolled credentials live in the catalog.
    let fleet = fleet.into_server();
    let result = server
        .add_service(control)
        .add_service(fleet)
        .serve_with_incoming_shutdown(
            // Without TCP_NODELAY a response written in more than one segment waits for the
            // client's delayed ACK (40 ms on Linux).
            tokio_stream::StreamExt::map(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                |conn| {
                    if let Ok(c) = &conn
                        && let Err(e) = c.set_nodelay(true)
                    {
                        tracing::debug!(error = %e, "connection without TCP_NODELAY");
                    }
                    conn
                },
            ),
            async {
                tokio::select! {
                    _ = shutdown => {}
                    Ok(lost) = lost_rx => {
                        tracing::error!(reason = %lost, "stopped leading; shutting down");
                        let _ = lost_store.set(lost);
                    }
                }
                tracing::info!("shutting down: closing host streams");
                closing_registry.close_all();
                let _ = stopping_tx.send(true);
            },
        );
    // Graceful, but bounded: connections still open after the grace period are dropped.
    let result = tokio::select! {
        r = result => r,
        _ = async {
            let _ = stopping_rx.wait_for(|s| *s).await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!(grace = ?SHUTDOWN_GRACE, "connections still open after the grace period; stopping anyway");
            Ok(())
        }
    };
    reaper.abort();
    flusher.abort();
    if let Some(e) = election {
        e.abort();
    }
    enforcer.abort();
    if let Some(d) = dashboard {
        d.abort();
    }
    closing_catalog.close(SHUTDOWN_GRACE).await;
    result?;
    match lost.get() {
        Some(l) => Err(CoordinatorError::LeadLost(l.clone())),
        None => Ok(()),
    }
}

/// What a coordinator does when it begins to lead: runs interrupted by the last leader's end
/// go back to the queue, and every unfinished job gets its driver again.
async fn resume(
    catalog: &catalog::Catalog,
    scheduler: &std::sync::Arc<scheduler::Scheduler>,
) -> Result<(), catalog::CatalogError> {
    let requeued = catalog.requeue_interrupted().await?;
    for job_id in catalog.unfinished_jobs().await? {
        tracing::info!(job_id = %job_id, requeued, "resuming job");
        scheduler.start_job(job_id);
    }
    Ok(())
}
