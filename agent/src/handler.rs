//! The agent's task handler: builds, prepares and stops clusters, and remembers which
//! clusters are running.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use blocklab_proto::fleet::{ProgressSink, TaskHandler, task_error};
use blocklab_proto::{
    BuildOptions, BuildResult, PrepareServerResult, PrepareServerTask, StopServerResult, Task,
    task, task_result,
};

use crate::AgentConfig;
use crate::build::BuildCache;
use crate::cluster::{self, Cluster, ClusterPlan};
use crate::conf::{parse_client_addresses, render_settings};
use crate::error::AgentError;
use crate::fsutil::create_dir_0755;
use crate::options::BuildSpec;
use crate::process::RunAs;
use crate::users::{check_traversable, resolve_pg_user};

/// Stage names reported in `TaskError.stage`.
pub const STAGE_BUILDING: &str = "building";
pub const STAGE_STARTING: &str = "starting";
pub const STAGE_STOPPING: &str = "stopping";

/// An error together with the run stage it happened in.
#[derive(Debug, thiserror::Error)]
#[error("{stage}: {error}")]
pub struct TaskFailure {
    pub stage: &'static str,
    #[source]
    pub error: AgentError,
}

impl TaskFailure {
    fn at(stage: &'static str) -> impl FnOnce(AgentError) -> Self {
        move |error| Self { stage, error }
    }

    fn into_outcome(self) -> task_result::Outcome {
        task_error(self.stage, self.error.to_string(), self.error.log_tail())
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
        for dir in [&config.work_dir, &config.build_cache] {
            create_dir_0755(dir)?;
            open_own_dir_for_others(dir)?;
            open_own_temp_ancestors(dir)?;
            check_traversable(dir, &run_as)?;
        }
        create_dir_0755(&config.work_dir.join("runs"))?;
        open_own_dir_for_others(&config.work_dir.join("runs"))?;
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
        let (w, b) = (
            self.config.work_dir.clone(),
            self.config.build_cache.clone(),
        );
        let facts =
            tokio::task::spawn_blocking(move || crate::facts::collect(&w, &b, &compiler)).await;
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
        Ok(self.cache.ensure(&spec, progress).await?.result)
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

        progress.stage(STAGE_STARTING, "initdb and start").await;
        let previous = self.lock().clusters.remove(run_id);
        if let Some(old) = previous {
            tracing::info!(run_id, "replacing the run's previous cluster");
            cluster::stop(&old)
                .await
                .map_err(TaskFailure::at(STAGE_STARTING))?;
        }
        let run_dir = self.run_dir(run_id);
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
        let mut st = self.lock();
        let data_dir = c.data_dir.display().to_string();
        st.clusters.insert(run_id.to_string(), c);
        drop(st);
        Ok(PrepareServerResult {
            conninfo: Some(started.conninfo),
            build_key: build.result.build_key,
            build_reused: build.result.reused,
            server_version: started.server_version,
            block_size: started.block_size,
            wal_block_size: started.wal_block_size,
            effective_settings: started.effective_settings,
            data_dir,
            ..Default::default()
        })
    }

    /// Stops the run's cluster and removes its directory (also for a directory left by an
    /// earlier agent process).
    pub async fn stop_server(&self, run_id: &str) -> Result<StopServerResult, AgentError> {
        cluster::validate_run_id(run_id)?;
        let tracked = self.lock().clusters.remove(run_id);
        match tracked {
            Some(c) => cluster::stop(&c).await?,
            None => cluster::stop_untracked(&self.run_dir(run_id)).await?,
        }
        tracing::info!(run_id, "cluster stopped and removed");
        Ok(StopServerResult {
            removed: !self.run_dir(run_id).exists(),
        })
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
        for c in clusters {
            if let Err(e) = cluster::stop(&c).await {
                tracing::warn!(run_id = %c.run_id, error = %e, "could not stop cluster");
            }
        }
    }

    /// Removes run directories left by an earlier agent process (stopping their servers).
    pub async fn cleanup_stale(&self) {
        let runs = self.config.work_dir.join("runs");
        let Ok(entries) = std::fs::read_dir(&runs) else {
            return;
        };
        let tracked: HashSet<String> = self.lock().clusters.keys().cloned().collect();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if tracked.contains(&name) {
                continue;
            }
            tracing::warn!(run_id = %name, "removing stale run directory");
            if let Err(e) = cluster::stop_untracked(&entry.path()).await {
                tracing::warn!(run_id = %name, error = %e, "could not remove stale run");
            }
        }
    }

    fn run_dir(&self, run_id: &str) -> PathBuf {
        self.config.work_dir.join("runs").join(run_id)
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
            Some(other) => task_error(
                STAGE_STARTING,
                format!("an agent does not run {} tasks", kind_name(&other)),
                "",
            ),
            None => task_error(STAGE_STARTING, "task has no kind", ""),
        }
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
    }
}

/// A directory the agent itself owns gets o+x so the PostgreSQL user can pass through it
/// (e.g. a 0700 temporary directory used as work_dir).
fn open_own_dir_for_others(dir: &Path) -> Result<(), AgentError> {
    let meta =
        std::fs::metadata(dir).map_err(|e| AgentError::io(format!("stat {}", dir.display()), e))?;
    if meta.uid() == nix::unistd::geteuid().as_raw() && meta.mode() & 0o001 == 0 {
        let mode = (meta.mode() | 0o011) & 0o7777;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
            .map_err(|e| AgentError::io(format!("chmod {}", dir.display()), e))?;
    }
    Ok(())
}

/// Test setups put work_dir inside a 0700 temporary directory: ancestors below the system
/// temp dir that the agent owns get o+x too. Nothing outside the temp dir is changed.
fn open_own_temp_ancestors(dir: &Path) -> Result<(), AgentError> {
    let tmp = std::env::temp_dir();
    for a in dir.ancestors().skip(1) {
        if a.starts_with(&tmp) && a != tmp {
            open_own_dir_for_others(a)?;
        }
    }
    Ok(())
}
