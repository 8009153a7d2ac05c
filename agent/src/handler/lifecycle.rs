//! The cluster life cycle: builds, prepare (build, initdb, start), stop, and the clean-up
//! of every cluster at fence, shutdown and start.

use std::collections::HashSet;
use std::path::Path;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    BuildOptions, BuildResult, Hello, PrepareServerResult, PrepareServerTask, Role,
    StopServerResult,
};
use blocklab_spec::Stage;

use super::convert;
use super::state::{AgentHandler, TaskFailure};
use crate::cluster::{self, Cluster, ClusterPlan, SERVER_LOGS_DIR};
use crate::conf::{parse_client_addresses, render_settings};
use crate::error::AgentError;
use crate::users::check_traversable;

impl AgentHandler {
    /// What the agent tells the coordinator when it attaches: its id, role, labels,
    /// version, address and host facts.
    pub async fn hello(&self) -> Hello {
        let c = &self.config;
        Hello {
            host_id: c.host_id.clone(),
            role: Role::Agent as i32,
            labels: c.labels.clone(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            address: c.advertise_addr.clone(),
            facts_json: self.facts_json().await,
        }
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
            let mut facts = crate::facts::collect(&dirs, &compiler);
            facts.warnings = crate::doctor::warnings(&crate::doctor::checks(&data_root, &wal_root));
            facts
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
        let spec = convert::build_spec(options)?;
        let build = self.cache.ensure(&spec, progress).await?;
        self.evict_builds().await;
        Ok(convert::build_result(&build.result))
    }

    /// Builds (or reuses), initialises, configures and starts the run's cluster.
    pub async fn prepare_server(
        &self,
        run_id: &str,
        task: &PrepareServerTask,
        progress: &ProgressSink,
    ) -> Result<PrepareServerResult, TaskFailure> {
        cluster::validate_run_id(run_id).map_err(TaskFailure::at(Stage::Starting))?;
        // Refuse bad settings and addresses before spending minutes on a build.
        let settings = convert::pg_settings(&task.settings);
        render_settings(&settings, &self.listen.to_string(), 1, Path::new("/"))
            .map_err(TaskFailure::at(Stage::Starting))?;
        parse_client_addresses(&task.allowed_client_addresses)
            .map_err(TaskFailure::at(Stage::Starting))?;
        let options = task
            .build
            .clone()
            .ok_or_else(|| AgentError::invalid("build", "missing build options"))
            .map_err(TaskFailure::at(Stage::Building))?;
        let spec = convert::build_spec(&options).map_err(TaskFailure::at(Stage::Building))?;
        progress.stage(Stage::Building, "ensuring build").await;
        let build = self
            .cache
            .ensure(&spec, Some(progress))
            .await
            .map_err(TaskFailure::at(Stage::Building))?;
        if !build.result.reused {
            self.evict_builds().await;
        }
        // The build's own catalog and parser judge the settings again, whatever the
        // coordinator checked: a setting of a group no spec may set never reaches a server.
        self.refuse_settings(&build.prefix, &settings)
            .await
            .map_err(TaskFailure::at(Stage::Starting))?;

        if task.archive_wal {
            let major: u32 = build
                .result
                .pg_version
                .split('.')
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or(0);
            if major < 15 {
                return Err(TaskFailure::at(Stage::Starting)(AgentError::invalid(
                    "layout.archive_wal",
                    format!(
                        "archives through the basic_archive module, which PostgreSQL 15 brought; this build is {}",
                        build.result.pg_version
                    ),
                )));
            }
        }
        progress.stage(Stage::Starting, "initdb and start").await;
        let previous = self.lock().clusters.remove(run_id);
        if let Some(old) = previous {
            tracing::info!(run_id, "replacing the run's previous cluster");
            cluster::stop(&old)
                .await
                .map_err(TaskFailure::at(Stage::Starting))?;
        }
        let run_dir = self.run_dir(run_id);
        let wal_dir = task.separate_wal.then(|| self.wal_dir(run_id));
        if !task.separate_wal {
            // A stale WAL directory of an earlier attempt is not this run's.
            let _ = std::fs::remove_dir_all(self.wal_dir(run_id));
        }
        check_traversable(&run_dir, &self.run_as).map_err(TaskFailure::at(Stage::Starting))?;
        check_traversable(&build.prefix.join("bin"), &self.run_as)
            .map_err(TaskFailure::at(Stage::Starting))?;
        // Another process may bind the port between our probe and the server's start:
        // then try the next free port (a few times).
        let mut avoid = HashSet::new();
        let (c, started) = loop {
            let port = self
                .reserve_port(&avoid)
                .map_err(TaskFailure::at(Stage::Starting))?;
            let plan = ClusterPlan {
                run_id,
                run_dir: run_dir.clone(),
                listen: self.listen,
                port,
                run_as: &self.run_as,
                settings: &settings,
                allowed_clients: &task.allowed_client_addresses,
                wal_dir: wal_dir.clone(),
                server_logs: Some(self.config.work_dir.join(SERVER_LOGS_DIR)),
                archive_wal: task.archive_wal,
            };
            let created = cluster::create(&plan, &build).await;
            self.lock().reserved_ports.remove(&port);
            match created {
                Err(e) if avoid.len() < 3 && e.log_tail().contains("Address already in use") => {
                    tracing::warn!(run_id, port, "port taken during start; retrying");
                    avoid.insert(port);
                }
                other => break other.map_err(TaskFailure::at(Stage::Starting))?,
            }
        };
        let data_dir = c.data_dir.display().to_string();
        self.lock().clusters.insert(run_id.to_string(), c);
        self.count_clusters();
        Ok(PrepareServerResult {
            conninfo: Some(convert::conninfo(started.conninfo)),
            build_key: build.result.build_key.clone(),
            build_reused: build.result.reused,
            server_version: started.server_version,
            block_size: started.block_size,
            wal_block_size: started.wal_block_size,
            effective_settings: convert::effective_settings(started.effective_settings),
            data_dir,
            wal_dir: wal_dir.map(|w| w.display().to_string()).unwrap_or_default(),
            postmaster_start_time: started.postmaster_start_time,
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
}
