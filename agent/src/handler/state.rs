//! The handler's state: the agent's configuration and build cache, the clusters it runs
//! (by run id), the ports it has reserved; and the error type of staged tasks.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Mutex;

use blocklab_daemon::fleet::task_error;
use blocklab_proto::task_result;
use blocklab_spec::Stage;

use crate::AgentConfig;
use crate::build::AllowedSources;
use crate::build::BuildCache;
use crate::cluster::{self, Cluster};
use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, open_own_dir_for_others, open_own_temp_ancestors};
use crate::process::RunAs;
use crate::users::{check_traversable, resolve_build_user, resolve_pg_user};

/// An error together with the run stage it happened in.
#[derive(Debug, thiserror::Error)]
#[error("{stage}: {error}")]
pub struct TaskFailure {
    pub stage: Stage,
    #[source]
    pub error: AgentError,
}

impl TaskFailure {
    pub fn at(stage: Stage) -> impl FnOnce(AgentError) -> Self {
        move |error| Self { stage, error }
    }

    pub fn into_outcome(self) -> task_result::Outcome {
        task_error(
            self.stage.as_str(),
            self.error.to_string(),
            self.error.log_tail(),
        )
    }
}

#[derive(Default)]
pub(super) struct State {
    pub(super) clusters: HashMap<String, Cluster>,
    pub(super) reserved_ports: HashSet<u16>,
}

pub struct AgentHandler {
    pub(super) config: AgentConfig,
    pub(super) cache: BuildCache,
    pub(super) run_as: RunAs,
    pub(super) listen: IpAddr,
    pub(super) state: Mutex<State>,
}

impl AgentHandler {
    /// Checks the configuration (servers' and builds users, address, ports) and creates the
    /// directories the agent owns.
    pub fn new(config: AgentConfig) -> Result<Self, AgentError> {
        let run_as = resolve_pg_user(config.pg_user.as_deref())?;
        let builder = resolve_build_user(config.build_user.as_deref(), &run_as)?;
        let listen: IpAddr = config.advertise_addr.trim().parse().map_err(|_| {
            AgentError::invalid(
                "advertise_addr",
                format!("{:?} is not an IP address", config.advertise_addr),
            )
        })?;
        if config.port_range.0 == 0 || config.port_range.0 > config.port_range.1 {
            return Err(AgentError::invalid(
                "port_range",
                format!("{:?} is empty or starts at 0", config.port_range),
            ));
        }
        for dir in [
            &config.work_dir,
            &config.build_cache,
            &config.data_root(),
            &config.wal_root(),
        ] {
            create_dir_0755(dir)?;
            open_own_dir_for_others(dir)?;
            open_own_temp_ancestors(dir)?;
            check_traversable(dir, &run_as)?;
            check_traversable(dir, &builder)?;
        }
        // The cache is the agent's; builds run in directories of their own inside it.
        let changed = crate::build::staging::claim_cache(&config.build_cache, &builder)?;
        if changed > 0 {
            tracing::info!(dir = %config.build_cache.display(), entries = changed, "build cache made the agent's");
        }
        Ok(Self {
            cache: BuildCache::new(
                config.build_cache.clone(),
                config.make_jobs,
                builder,
                run_as.clone(),
            )
            .with_allowed_sources(AllowedSources::parse(&config.allowed_sources)?),
            config,
            run_as,
            listen,
            state: Mutex::new(State::default()),
        })
    }

    /// The agent's build cache, as its tasks use it (the builds user, the servers' user, the
    /// allowed sources).
    pub fn build_cache(&self) -> &BuildCache {
        &self.cache
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The OS user clusters run as.
    pub fn pg_user(&self) -> &str {
        &self.run_as.name
    }

    /// The OS user builds run as.
    pub fn build_user(&self) -> &str {
        self.cache.builder().name.as_str()
    }

    /// Run ids of the clusters currently running.
    pub fn running(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().clusters.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// The pid of the run's postmaster while it runs (for tests that inject a crash).
    pub fn postmaster_pid(&self, run_id: &str) -> Option<i32> {
        let st = self.lock();
        let c = st.clusters.get(run_id)?;
        cluster::is_running(c).then_some(c.pid)
    }

    /// The cluster a run's task names (the id checked first).
    pub(super) fn cluster_of(&self, run_id: &str) -> Result<Cluster, AgentError> {
        cluster::validate_run_id(run_id)?;
        self.lock()
            .clusters
            .get(run_id)
            .cloned()
            .ok_or_else(|| AgentError::UnknownRun(run_id.to_string()))
    }

    /// Records the new postmaster pid of a cluster that was restarted; false when the run
    /// no longer has that cluster (it was stopped meanwhile).
    pub(super) fn restarted(&self, c: &Cluster) -> bool {
        let mut st = self.lock();
        match st.clusters.get_mut(&c.run_id) {
            Some(reg) if reg.data_dir == c.data_dir => {
                reg.pid = c.pid;
                true
            }
            _ => false,
        }
    }

    pub(super) fn count_clusters(&self) {
        let n = self.lock().clusters.len();
        crate::metrics::CLUSTERS_RUNNING.set(n as u64);
    }

    pub(super) fn run_dir(&self, run_id: &str) -> PathBuf {
        self.config.data_root().join(run_id)
    }

    pub(super) fn wal_dir(&self, run_id: &str) -> PathBuf {
        self.config.wal_root().join(run_id)
    }

    pub(super) fn reserve_port(&self, avoid: &HashSet<u16>) -> Result<u16, AgentError> {
        let mut st = self.lock();
        let mut taken: HashSet<u16> = st.clusters.values().map(|c| c.port).collect();
        taken.extend(avoid.iter().copied());
        taken.extend(st.reserved_ports.iter().copied());
        let port =
            cluster::pick_port(self.config.port_range, self.listen, &taken).ok_or_else(|| {
                AgentError::Other(format!(
                    "no free port in {}-{} on {}",
                    self.config.port_range.0, self.config.port_range.1, self.listen
                ))
            })?;
        st.reserved_ports.insert(port);
        Ok(port)
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}
