//! blocklab agent (database host): builds PostgreSQL at a chosen BLCKSZ / XLOG_BLCKSZ as an
//! unprivileged builds user into a build cache only the agent writes, runs one cluster per
//! benchmark run as another unprivileged user, and reports host facts. `serve` attaches to the coordinator; [`AgentHandler`] can also be driven directly.

pub mod build;
pub mod cache;
pub mod cluster;
pub mod conf;
pub mod diskio;
pub mod doctor;
pub mod error;
pub mod facts;
pub mod fsutil;
pub mod guc;
pub mod handler;
pub mod maintenance;
pub mod metrics;
pub mod options;
pub mod probe;
pub mod process;
pub mod stats;
pub mod users;
pub mod waldump;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use blocklab_daemon::fleet::{SessionConfig, run_session};

pub use error::AgentError;
pub use handler::{AgentHandler, TaskFailure};

/// Default directory for run clusters.
pub const DEFAULT_WORK_DIR: &str = "/var/lib/blocklab/agent";
/// Default build cache.
pub const DEFAULT_BUILD_CACHE: &str = "/var/cache/blocklab/builds";
/// Default PostgreSQL user when the agent runs as root.
pub const DEFAULT_PG_USER: &str = "blocklab";
/// Default builds user when the agent runs as root.
pub const DEFAULT_BUILD_USER: &str = "blocklab-build";
/// Default port range for clusters.
pub const DEFAULT_PORT_RANGE: (u16, u16) = (54320, 54399);

#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Coordinator URL, e.g. `http://127.0.0.1:7400`.
    pub coordinator: String,
    pub host_id: String,
    pub labels: Vec<String>,
    /// IP PostgreSQL listens on and that goes into conninfo.
    pub advertise_addr: String,
    /// Agent state; `data_root` and `wal_root` default to directories below it.
    pub work_dir: PathBuf,
    /// Run directories (data directory, logs): `data_root/<run_id>/`. Default
    /// `work_dir/runs`.
    pub data_root: Option<PathBuf>,
    /// WAL directories of runs with `separate_wal`: `wal_root/<run_id>/`. Default
    /// `work_dir/wal`.
    pub wal_root: Option<PathBuf>,
    /// The only directory `[workload.init] dump` archives are restored from (a spec names a
    /// path below it). Default `work_dir/dumps`.
    pub dumps_dir: Option<PathBuf>,
    pub build_cache: PathBuf,
    /// Size cap of the build cache: after each new build the least recently used builds
    /// not in use are removed until the builds total at most this. `None` = no cap.
    pub build_cache_max_bytes: Option<u64>,
    /// OS user for initdb/postgres; `None` = the current user (which must not be root).
    pub pg_user: Option<String>,
    /// OS user that unpacks, configures, makes and installs sources (`--build-user`); as
    /// root it is required and must differ from `pg_user`; `None` = the current user
    /// (developer mode: one uid for agent, builds and servers).
    pub build_user: Option<String>,
    /// Inclusive.
    pub port_range: (u16, u16),
    pub make_jobs: usize,
    /// Used until the coordinator's welcome says otherwise.
    pub heartbeat_interval: Duration,
    /// CA to verify the coordinator's certificate (`--ca-cert`); `None` = plain http.
    pub tls: Option<blocklab_daemon::security::ClientTls>,
    /// Fleet join token (`--token-file` / `BLOCKLAB_FLEET_TOKEN`); `Debug` redacts it.
    pub token: Option<blocklab_daemon::security::Secret>,
    /// The only sources this agent builds (`--allow-source`); empty: any a task names.
    pub allowed_sources: Vec<String>,
}

impl AgentConfig {
    /// Defaults: host id = hostname, address 127.0.0.1, the standard directories, the
    /// `blocklab` (servers) and `blocklab-build` (builds) users when running as root,
    /// `make -j<cores>`.
    pub fn default_for(coordinator: &str) -> Self {
        Self {
            coordinator: coordinator.to_string(),
            host_id: facts::hostname(),
            labels: Vec::new(),
            advertise_addr: "127.0.0.1".into(),
            work_dir: PathBuf::from(DEFAULT_WORK_DIR),
            data_root: None,
            wal_root: None,
            dumps_dir: None,
            build_cache: PathBuf::from(DEFAULT_BUILD_CACHE),
            build_cache_max_bytes: None,
            pg_user: default_pg_user(),
            build_user: default_build_user(),
            port_range: DEFAULT_PORT_RANGE,
            make_jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            heartbeat_interval: Duration::from_secs(2),
            tls: None,
            token: None,
            allowed_sources: Vec::new(),
        }
    }
}

impl AgentConfig {
    pub fn data_root(&self) -> PathBuf {
        self.data_root
            .clone()
            .unwrap_or_else(|| self.work_dir.join("runs"))
    }

    pub fn wal_root(&self) -> PathBuf {
        self.wal_root
            .clone()
            .unwrap_or_else(|| self.work_dir.join("wal"))
    }

    pub fn dumps_dir(&self) -> PathBuf {
        self.dumps_dir
            .clone()
            .unwrap_or_else(|| self.work_dir.join("dumps"))
    }
}

/// `blocklab` when running as root (PostgreSQL refuses root), otherwise the current user.
pub fn default_pg_user() -> Option<String> {
    nix::unistd::geteuid()
        .is_root()
        .then(|| DEFAULT_PG_USER.to_string())
}

/// `blocklab-build` when running as root, otherwise the current user.
pub fn default_build_user() -> Option<String> {
    nix::unistd::geteuid()
        .is_root()
        .then(|| DEFAULT_BUILD_USER.to_string())
}

/// Runs the agent until `shutdown` resolves: attaches to the coordinator (reconnecting),
/// executes tasks, and on shutdown stops and removes every running cluster.
pub async fn serve(
    config: AgentConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), AgentError> {
    serve_boxed(config, Box::pin(shutdown)).await
}

async fn serve_boxed(
    config: AgentConfig,
    shutdown: blocklab_daemon::Shutdown<'_>,
) -> Result<(), AgentError> {
    let session = SessionConfig {
        coordinator: config.coordinator.clone(),
        hello: Default::default(),
        heartbeat_interval: config.heartbeat_interval,
        max_backoff: Duration::from_secs(10),
        fence_after: Duration::from_secs(10),
        tls: config.tls.clone(),
        token: config.token.clone(),
    };
    session.check().map_err(|reason| AgentError::Invalid {
        field: "--token-file".into(),
        reason,
    })?;
    let handler = Arc::new(AgentHandler::new(config.clone())?);
    if !nix::unistd::geteuid().is_root() {
        tracing::warn!(
            user = %handler.pg_user(),
            "the agent is not root: builds, servers and the agent share this one uid (developer \
             mode), so a build can read the agent's files and other builds; run it as root with \
             --pg-user and --build-user to keep them apart"
        );
    }
    handler.cleanup_stale().await;
    let hello = handler.hello().await;
    tracing::info!(
        host_id = %config.host_id,
        coordinator = %config.coordinator,
        address = %config.advertise_addr,
        pg_user = %handler.pg_user(),
        build_user = %handler.build_user(),
        "agent starting"
    );
    let session = SessionConfig { hello, ..session };
    run_session(session, handler, shutdown).await;
    tracing::info!("agent stopped");
    Ok(())
}
