//! The agent's task handler: builds, prepares and stops clusters, and remembers which
//! clusters are running.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use blocklab_daemon::fleet::{ProgressSink, TaskHandler, task_error};
use blocklab_proto::{
    BuildOptions, BuildResult, PrepareServerResult, PrepareServerTask, StopServerResult, Task,
    task, task_result,
};
use blocklab_spec::Stage;

#[path = "maintenance.rs"]
mod maintenance;
#[path = "ops.rs"]
mod ops;
pub use ops::{ProbeReport, drop_os_cache};

use crate::AgentConfig;
use crate::build::BuildCache;
use crate::cluster::{self, Cluster, ClusterPlan};
use crate::conf::{parse_client_addresses, render_settings};
use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, open_own_dir_for_others, open_own_temp_ancestors};
use crate::options::BuildSpec;
use crate::process::RunAs;
use crate::users::{check_traversable, resolve_pg_user};

/// Stage names reported in `TaskError.stage`.
pub const STAGE_BUILDING: Stage = Stage::Building;
pub const STAGE_STARTING: Stage = Stage::Starting;
pub const STAGE_STOPPING: Stage = Stage::Stopping;
pub const STAGE_MEASURING: Stage = Stage::Measuring;
/// Stage of a failed I/O probe or build listing (not part of a run's life).
pub const STAGE_PROBING: Stage = Stage::Probing;
pub const STAGE_MAINTENANCE: Stage = Stage::Maintenance;

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
struct State {
    clusters: HashMap<String, Cluster>,
    reserved_ports: HashSet<u16>,
}

pub struct AgentHandler {
    config: AgentConfig,
    cache: BuildCache,
    run_as: RunAs,
    listen: IpAddr,
    state: Mutex<State>,
}

impl AgentHandler {
    /// Checks the configuration (PostgreSQL user, address, ports) and creates the
    /// directories the agent owns.
    pub fn new(config: AgentConfig) -> Result<Self, AgentError> {
        let run_as = resolve_pg_user(config.pg_user.as_deref())?;
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
        }
        Ok(Self {
            cache: BuildCache::new(config.build_cache.clone(), config.make_jobs),
            config,
            run_as,
            listen,
            state: Mutex::new(State::default()),
        })
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The OS user clusters run as.
    pub fn pg_user(&self) -> &str {
        &self.run_as.name
    }

    /// Host facts as a JSON object string.
    pub async fn facts_json(&self) -> String {
        let compiler = self.cache.compiler().await;
        let c = self.config.clone();
        let facts = tokio::task::spawn_blocking(move || {
            let (data_root, wal_root) = (c.data_root(), c.wal_root());
            let dirs = crate::facts::FactDirs {
                work_dir: &c.work_dir,
                build_cache: &c.build_cache,
                data_root: &data_root,
                wal_root: &wal_root,
            };
            crate::facts::collect(&dirs, &compiler)
        })
        .await;
        match facts.map(|f| serde_json::to_string(&f)) {
            Ok(Ok(json)) => json,
            _ => "{}".into(),
        }
    }

    /// Returns a cached build or builds it (task `BuildTask`).
    pub async fn ensure_build(
        &self,
        options: &BuildOptions,
        progress: Option<&ProgressSink>,
    ) -> Result<BuildResult, AgentError> {
        let spec = BuildSpec::from_proto(options)?;
        let build = self.cache.ensure(&spec, progress).await?;
        self.evict_builds().await;
        Ok(build.result.clone())
    }

    /// Builds (or reuses), initialises, configures and starts the run's cluster.
    pub async fn prepare_server(
        &self,
        run_id: &str,
        task: &PrepareServerTask,
        progress: &ProgressSink,
    ) -> Result<PrepareServerResult, TaskFailure> {
        cluster::validate_run_id(run_id).map_err(TaskFailure::at(STAGE_STARTING))?;
        // Refuse bad settings and addresses before spending minutes on a build.
        render_settings(&task.settings, &self.listen.to_string(), 1, Path::new("/"))
            .map_err(TaskFailure::at(STAGE_STARTING))?;
        parse_client_addresses(&task.allowed_client_addresses)
            .map_err(TaskFailure::at(STAGE_STARTING))?;
        let options = task
            .build
            .clone()
            .ok_or_else(|| AgentError::invalid("build", "missing build options"))
            .map_err(TaskFailure::at(STAGE_BUILDING))?;
        let spec = BuildSpec::from_proto(&options).map_err(TaskFailure::at(STAGE_BUILDING))?;
        progress.stage(STAGE_BUILDING, "ensuring build").await;
        let build = self
            .cache
            .ensure(&spec, Some(progress))
            .await
            .map_err(TaskFailure::at(STAGE_BUILDING))?;
        if !build.result.reused {
            self.evict_builds().await;
        }

        progress.stage(STAGE_STARTING, "initdb and start").await;
        let previous = self.lock().clusters.remove(run_id);
        if let Some(old) = previous {
            tracing::info!(run_id, "replacing the run's previous cluster");
            cluster::stop(&old)
                .await
                .map_err(TaskFailure::at(STAGE_STARTING))?;
        }
        let run_dir = self.run_dir(run_id);
        let wal_dir = task.separate_wal.then(|| self.wal_dir(run_id));
        if !task.separate_wal {
            // A stale WAL directory of an earlier attempt is not this run's.
            let _ = std::fs::remove_dir_all(self.wal_dir(run_id));
        }
        check_traversable(&run_dir, &self.run_as).map_err(TaskFailure::at(STAGE_STARTING))?;
        check_traversable(&build.prefix.join("bin"), &self.run_as)
            .map_err(TaskFailure::at(STAGE_STARTING))?;
        // Another process may bind the port between our probe and the server's start:
        // then try the next free port (a few times).
        let mut avoid = HashSet::new();
        let (c, started) = loop {
            let port = self
                .reserve_port(&avoid)
                .map_err(TaskFailure::at(STAGE_STARTING))?;
            let plan = ClusterPlan {
                run_id,
                run_dir: run_dir.clone(),
                listen: self.listen,
                port,
                run_as: &self.run_as,
                settings: &task.settings,
                allowed_clients: &task.allowed_client_addresses,
                wal_dir: wal_dir.clone(),
            };
            let created = cluster::create(&plan, &build).await;
            self.lock().reserved_ports.remove(&port);
            match created {
                Err(e) if avoid.len() < 3 && e.log_tail().contains("Address already in use") => {
                    tracing::warn!(run_id, port, "port taken during start; retrying");
                    avoid.insert(port);
                }
                other => break other.map_err(TaskFailure::at(STAGE_STARTING))?,
            }
        };
        let data_dir = c.data_dir.display().to_string();
        self.lock().clusters.insert(run_id.to_string(), c);
        self.count_clusters();
        let os_cache_dropped = if task.drop_os_cache {
            progress
                .stage(STAGE_STARTING, "dropping the OS page cache")
                .await;
            ops::drop_os_cache().await
        } else {
            false
        };
        Ok(PrepareServerResult {
            conninfo: Some(started.conninfo),
            build_key: build.result.build_key,
            build_reused: build.result.reused,
            server_version: started.server_version,
            block_size: started.block_size,
            wal_block_size: started.wal_block_size,
            effective_settings: started.effective_settings,
            data_dir,
            wal_dir: wal_dir.map(|w| w.display().to_string()).unwrap_or_default(),
            postmaster_start_time: started.postmaster_start_time,
            os_cache_dropped,
        })
    }

    /// Stops the run's cluster and removes its directory (also for a directory left by an
    /// earlier agent process).
    pub async fn stop_server(&self, run_id: &str) -> Result<StopServerResult, AgentError> {
        cluster::validate_run_id(run_id)?;
        let tracked = self.lock().clusters.remove(run_id);
        self.count_clusters();
        match tracked {
            Some(c) => cluster::stop(&c).await?,
            None => cluster::stop_untracked(&self.run_dir(run_id), &self.wal_dir(run_id)).await?,
        }
        tracing::info!(run_id, "cluster stopped and removed");
        Ok(StopServerResult {
            removed: !self.run_dir(run_id).exists(),
        })
    }

    fn count_clusters(&self) {
        let n = self.lock().clusters.len();
        crate::metrics::CLUSTERS_RUNNING.set(n as u64);
    }

    /// Run ids of the clusters currently running.
    pub fn running(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().clusters.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Stops and removes every cluster this agent runs.
    pub async fn stop_all(&self) {
        let clusters: Vec<Cluster> = self.lock().clusters.drain().map(|(_, c)| c).collect();
        self.count_clusters();
        for c in clusters {
            if let Err(e) = cluster::stop(&c).await {
                tracing::warn!(run_id = %c.run_id, error = %e, "could not stop cluster");
            }
        }
    }

    /// Removes run directories left by an earlier agent process (stopping their servers).
    pub async fn cleanup_stale(&self) {
        let tracked: HashSet<String> = self.lock().clusters.keys().cloned().collect();
        let mut names = std::collections::BTreeSet::new();
        // Only directories the agent made: run directories carry a marker; a WAL directory
        // counts with its run directory, or alone when it looks like pg_wal.
        for (root, is_ours) in [
            (
                self.config.data_root(),
                (|p: &Path| p.join(cluster::RUN_MARKER).is_file()) as fn(&Path) -> bool,
            ),
            (self.config.wal_root(), |p: &Path| {
                p.join("archive_status").is_dir()
            }),
        ] {
            if let Ok(entries) = std::fs::read_dir(&root) {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if !tracked.contains(&name)
                        && cluster::validate_run_id(&name).is_ok()
                        && is_ours(&e.path())
                    {
                        names.insert(name);
                    }
                }
            }
        }
        for name in names {
            tracing::warn!(run_id = %name, "removing stale run directory");
            let res = cluster::stop_untracked(&self.run_dir(&name), &self.wal_dir(&name)).await;
            if let Err(e) = res {
                tracing::warn!(run_id = %name, error = %e, "could not remove stale run");
            }
        }
    }

    fn run_dir(&self, run_id: &str) -> PathBuf {
        self.config.data_root().join(run_id)
    }

    fn wal_dir(&self, run_id: &str) -> PathBuf {
        self.config.wal_root().join(run_id)
    }

    fn reserve_port(&self, avoid: &HashSet<u16>) -> Result<u16, AgentError> {
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

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps inconsistent.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl TaskHandler for AgentHandler {
    async fn handle(&self, task: Task, progress: ProgressSink) -> task_result::Outcome {
        match task.kind {
            Some(task::Kind::Build(b)) => {
                let options = b.options.unwrap_or_default();
                match self.ensure_build(&options, Some(&progress)).await {
                    Ok(r) => task_result::Outcome::Build(r),
                    Err(e) => TaskFailure::at(STAGE_BUILDING)(e).into_outcome(),
                }
            }
            Some(task::Kind::PrepareServer(p)) => {
                match self.prepare_server(&task.run_id, &p, &progress).await {
                    Ok(r) => task_result::Outcome::PrepareServer(r),
                    Err(f) => f.into_outcome(),
                }
            }
            Some(task::Kind::StopServer(_)) => match self.stop_server(&task.run_id).await {
                Ok(r) => task_result::Outcome::StopServer(r),
                Err(e) => TaskFailure::at(STAGE_STOPPING)(e).into_outcome(),
            },
            Some(task::Kind::SnapshotStats(s)) => match self.snapshot_stats(&task.run_id, &s).await
            {
                Ok(r) => task_result::Outcome::SnapshotStats(r),
                Err(e) => TaskFailure::at(STAGE_MEASURING)(e).into_outcome(),
            },
            Some(task::Kind::RunProbe(p)) => match self.run_probe(&p, Some(&progress)).await {
                Ok(r) => task_result::Outcome::RunProbe(r.result),
                Err(e) => TaskFailure::at(STAGE_PROBING)(e).into_outcome(),
            },
            Some(task::Kind::ListBuilds(_)) => {
                task_result::Outcome::ListBuilds(self.list_builds().await)
            }
            Some(task::Kind::RunMaintenance(m)) => {
                match self.run_maintenance(&task.run_id, &m, &progress).await {
                    Ok(r) => task_result::Outcome::RunMaintenance(r),
                    Err(e) => TaskFailure::at(STAGE_MAINTENANCE)(e).into_outcome(),
                }
            }
            Some(other) => task_error(
                STAGE_STARTING.as_str(),
                format!("an agent does not run {} tasks", kind_name(&other)),
                "",
            ),
            None => task_error(STAGE_STARTING.as_str(), "task has no kind", ""),
        }
    }

    async fn on_fence(&self) {
        let running = self.running();
        if !running.is_empty() {
            tracing::warn!(runs = ?running, "fenced: stopping every cluster of this agent");
        }
        self.stop_all().await;
    }

    async fn on_shutdown(&self) {
        self.stop_all().await;
    }
}

fn kind_name(k: &task::Kind) -> &'static str {
    match k {
        task::Kind::Build(_) => "build",
        task::Kind::PrepareServer(_) => "prepare_server",
        task::Kind::StopServer(_) => "stop_server",
        task::Kind::InitData(_) => "init_data",
        task::Kind::RunLoad(_) => "run_load",
        task::Kind::SnapshotStats(_) => "snapshot_stats",
        task::Kind::RunProbe(_) => "run_probe",
        task::Kind::ListBuilds(_) => "list_builds",
        task::Kind::WorkloadStep(_) => "workload_step",
        task::Kind::RunMaintenance(_) => "run_maintenance",
    }
}
