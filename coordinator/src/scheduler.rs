//! The scheduler: one driver per job. It pins the job to a database host, has every build
//! made before the first measurement, then executes the runs in their planned order, one at
//! a time per host, persisting each step before acting on it.

use std::sync::Arc;
use std::time::Duration;

use blocklab_proto::v1::{
    BuildOptions, BuildTask, InitDataTask, PrepareServerTask, RunLoadTask, Setting, SourceSpec,
    StopServerTask, task, task_result::Outcome,
};
use tokio::sync::broadcast;

use crate::catalog::{BuildRecord, Catalog, CatalogError, CellRecord, RunRecord, ServerRecord};
use crate::fleet::{HostSession, Registry};
use crate::spec::{Spec, SpecError};

const BUILD_TIMEOUT: Duration = Duration::from_secs(60 * 60);
const PREPARE_TIMEOUT: Duration = Duration::from_secs(60 * 60);
const INIT_TIMEOUT: Duration = Duration::from_secs(60 * 60);
const STOP_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("stored spec no longer validates: {0}")]
    Spec(#[from] SpecError),
}

/// Schedules jobs; `events` carries the id of every job that changed.
pub struct Scheduler {
    pub catalog: Catalog,
    pub registry: Arc<Registry>,
    pub events: broadcast::Sender<String>,
}

/// How long a job waits for a host it needs before giving up on a run.
const HOST_WAIT: Duration = Duration::from_secs(120);

impl Scheduler {
    pub fn new(catalog: Catalog, registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            catalog,
            registry,
            events: broadcast::channel(1024).0,
        })
    }

    fn changed(&self, job_id: &str) {
        let _ = self.events.send(job_id.to_string());
    }

    /// Starts driving a job in the background.
    pub fn start_job(self: &Arc<Self>, job_id: String) {
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.drive(&job_id).await {
                tracing::error!(job_id = %job_id, error = %e, "job driver failed");
                let _ = this
                    .catalog
                    .set_job_state(&job_id, "failed", Some(&e.to_string()))
                    .await;
            }
            this.changed(&job_id);
        });
    }

    /// Applies progress reports from hosts to the runs' stages.
    pub fn follow_progress(self: &Arc<Self>) {
        let this = self.clone();
        let mut rx = self.registry.progress.subscribe();
        tokio::spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(p) if !p.run_id.is_empty() => {
                        if let Ok(true) =
                            this.catalog.set_stage(&p.run_id, p.attempt, &p.stage).await
                        {
                            let _ = this.events.send(String::new());
                        }
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    async fn drive(&self, job_id: &str) -> Result<(), SchedulerError> {
        let job = self.catalog.job(job_id).await?;
        let spec = Spec::parse(&job.spec_toml)?;
        tracing::info!(job_id, name = %spec.name, "job started");
        let Some(agent) = self.wait_for_agent(&spec, job.db_host_id.as_deref()).await else {
            let reason = format!(
                "no database host with labels {:?} attached within {HOST_WAIT:?}",
                spec.db_host_labels
            );
            self.catalog
                .fail_queued_runs(job_id, "queued", &reason, None)
                .await?;
            self.catalog
                .set_job_state(job_id, "failed", Some(&reason))
                .await?;
            return Ok(());
        };
        let db_host = agent.host_id.clone();
        self.catalog.pin_job_host(job_id, &db_host).await?;
        self.catalog.set_job_state(job_id, "building", None).await?;
        self.changed(job_id);
        let cells = self.catalog.cells(job_id).await?;
        let busy = agent.busy.clone();
        let guard = busy.lock().await;
        self.make_builds(job_id, &spec, &agent, &cells).await?;
        drop(guard);
        self.catalog.set_job_state(job_id, "running", None).await?;
        self.changed(job_id);
        for run in self.catalog.runs(job_id).await? {
            if run.state != "queued" {
                continue;
            }
            let Some(cell) = cells.iter().find(|c| c.cell_index == run.cell_index) else {
                continue;
            };
            self.execute_run(job_id, &spec, cell, &run, &db_host)
                .await?;
            self.changed(job_id);
        }
        let job = self.catalog.job(job_id).await?;
        let (state, error) = if job.runs_done == job.runs_total {
            ("done", None)
        } else {
            (
                "failed",
                Some(format!(
                    "{} of {} runs did not finish",
                    job.runs_total - job.runs_done,
                    job.runs_total
                )),
            )
        };
        self.catalog
            .set_job_state(job_id, state, error.as_deref())
            .await?;
        tracing::info!(job_id, state, "job finished");
        Ok(())
    }

    async fn wait_for_agent(&self, spec: &Spec, pinned: Option<&str>) -> Option<Arc<HostSession>> {
        let matches = |s: &HostSession| {
            s.role == blocklab_proto::Role::Agent
                && pinned.is_none_or(|p| p == s.host_id)
                && spec.db_host_labels.iter().all(|l| s.labels.contains(l))
        };
        self.wait_for(|| self.registry.up().into_iter().find(|s| matches(s)))
            .await
    }

    async fn wait_for<T>(&self, mut find: impl FnMut() -> Option<T>) -> Option<T> {
        let deadline = tokio::time::Instant::now() + HOST_WAIT;
        loop {
            if let Some(found) = find() {
                return Some(found);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            let _ =
                tokio::time::timeout(Duration::from_millis(500), self.registry.changed.notified())
                    .await;
        }
    }

    async fn make_builds(
        &self,
        job_id: &str,
        spec: &Spec,
        agent: &HostSession,
        cells: &[CellRecord],
    ) -> Result<(), SchedulerError> {
        for (bs, wal) in spec.builds() {
            let kind = task::Kind::Build(BuildTask {
                options: Some(build_options(spec, bs, wal)),
            });
            let failure = match agent.call("", 0, kind, BUILD_TIMEOUT).await {
                Ok(Outcome::Build(b)) => {
                    tracing::info!(job_id, build_key = %b.build_key, reused = b.reused, seconds = b.build_seconds, "build ready");
                    let rec = BuildRecord {
                        build_key: b.build_key,
                        block_size_kb: bs,
                        wal_block_size_kb: wal,
                        source_sha256: b.source_sha256,
                        pg_version: b.pg_version,
                        reused: b.reused,
                        build_seconds: b.build_seconds,
                    };
                    self.catalog
                        .record_build(job_id, &agent.host_id, &rec)
                        .await?;
                    None
                }
                Ok(Outcome::Error(e)) => Some(format!("{}{}", e.reason, tail_suffix(&e.log_tail))),
                Ok(_) => Some("agent answered a build with the wrong result kind".to_string()),
                Err(e) => Some(e.to_string()),
            };
            if let Some(reason) = failure {
                tracing::warn!(job_id, bs, wal, reason = %reason, "build failed");
                let affected: Vec<u32> = cells
                    .iter()
                    .filter(|c| c.block_size_kb == bs && c.wal_block_size_kb == wal)
                    .map(|c| c.cell_index)
                    .collect();
                self.catalog
                    .fail_queued_runs(job_id, "building", &reason, Some(&affected))
                    .await?;
            }
            self.changed(job_id);
        }
        Ok(())
    }

    async fn execute_run(
        &self,
        job_id: &str,
        spec: &Spec,
        cell: &CellRecord,
        run: &RunRecord,
        db_host: &str,
    ) -> Result<(), SchedulerError> {
        let Some(agent) = self.wait_for(|| self.registry.get(db_host)).await else {
            self.catalog
                .fail_queued_runs(
                    job_id,
                    "starting",
                    &format!("database host {db_host} is down"),
                    Some(&[cell.cell_index]),
                )
                .await?;
            return Ok(());
        };
        let agent_busy = agent.busy.clone();
        let _agent_guard = agent_busy.lock().await;
        let Some((worker, _worker_guard)) = self
            .wait_for(|| {
                self.registry
                    .up()
                    .into_iter()
                    .filter(|s| s.role == blocklab_proto::Role::Worker)
                    .find_map(|s| s.busy.clone().try_lock_owned().ok().map(|g| (s, g)))
            })
            .await
        else {
            self.catalog
                .fail_queued_runs(
                    job_id,
                    "starting",
                    "no client worker attached",
                    Some(&[cell.cell_index]),
                )
                .await?;
            return Ok(());
        };
        let run_id = run.run_id.as_str();
        let attempt = self
            .catalog
            .begin_attempt(run_id, &agent.host_id, &worker.host_id)
            .await?;
        self.changed(job_id);
        tracing::info!(job_id, run_id, attempt, cell = %cell.label, repetition = run.repetition, "run started");
        let outcome = self
            .measure(spec, cell, run_id, attempt, &agent, &worker, job_id)
            .await;
        // The server goes away whatever happened.
        match agent
            .call(
                run_id,
                attempt,
                task::Kind::StopServer(StopServerTask {}),
                STOP_TIMEOUT,
            )
            .await
        {
            Ok(Outcome::StopServer(_)) => {}
            Ok(Outcome::Error(e)) => {
                tracing::warn!(run_id, reason = %e.reason, "stopping the server failed")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(run_id, error = %e, "stopping the server failed"),
        }
        match outcome {
            Ok(result) => {
                if !self.catalog.finish_run(run_id, attempt, &result).await? {
                    tracing::warn!(run_id, attempt, "result of a stale attempt discarded");
                }
                tracing::info!(run_id, tps = result.tps_excluding_connections, "run done");
            }
            Err((stage, reason, tail)) => {
                tracing::warn!(run_id, stage = %stage, reason = %reason, "run failed");
                self.catalog
                    .fail_run(run_id, attempt, &stage, &reason, &tail)
                    .await?;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn measure(
        &self,
        spec: &Spec,
        cell: &CellRecord,
        run_id: &str,
        attempt: u32,
        agent: &HostSession,
        worker: &HostSession,
        job_id: &str,
    ) -> Result<blocklab_proto::RunLoadResult, (String, String, String)> {
        let fail = |stage: &str, reason: String, tail: String| (stage.to_string(), reason, tail);
        let settings = spec
            .settings
            .iter()
            .map(|(n, v)| Setting {
                name: n.clone(),
                value: v.clone(),
            })
            .collect();
        let prepare = PrepareServerTask {
            build: Some(build_options(
                spec,
                cell.block_size_kb,
                cell.wal_block_size_kb,
            )),
            settings,
            allowed_client_addresses: vec![worker.address.clone()],
            ..Default::default()
        };
        let server = match agent
            .call(
                run_id,
                attempt,
                task::Kind::PrepareServer(prepare),
                PREPARE_TIMEOUT,
            )
            .await
        {
            Ok(Outcome::PrepareServer(p)) => p,
            Ok(Outcome::Error(e)) => return Err(fail(&e.stage, e.reason, e.log_tail)),
            Ok(_) => {
                return Err(fail(
                    "starting",
                    "agent answered with the wrong result kind".into(),
                    String::new(),
                ));
            }
            Err(e) => return Err(fail("starting", e.to_string(), String::new())),
        };
        let conninfo = server.conninfo.clone().unwrap_or_default();
        let record = ServerRecord {
            build_key: server.build_key.clone(),
            build_reused: server.build_reused,
            server_version: server.server_version.clone(),
            block_size: server.block_size,
            wal_block_size: server.wal_block_size,
            server_address: format!("{}:{}", conninfo.host, conninfo.port),
            settings: server
                .effective_settings
                .iter()
                .map(|s| {
                    (
                        s.name.clone(),
                        s.setting.clone(),
                        s.unit.clone(),
                        s.source.clone(),
                    )
                })
                .collect(),
        };
        self.catalog
            .record_server(run_id, attempt, &record)
            .await
            .map_err(|e| fail("starting", e.to_string(), String::new()))?;
        self.changed(job_id);
        let (want_bs, want_wal) = (cell.block_size_kb * 1024, cell.wal_block_size_kb * 1024);
        if server.block_size != want_bs || server.wal_block_size != want_wal {
            return Err(fail(
                "starting",
                format!(
                    "live server reports block_size {} / wal_block_size {}, the cell asks for {want_bs} / {want_wal}",
                    server.block_size, server.wal_block_size
                ),
                String::new(),
            ));
        }
        let init = InitDataTask {
            conninfo: Some(conninfo.clone()),
            scale: spec.workload.scale,
        };
        match worker
            .call(run_id, attempt, task::Kind::InitData(init), INIT_TIMEOUT)
            .await
        {
            Ok(Outcome::InitData(_)) => {}
            Ok(Outcome::Error(e)) => return Err(fail("loading-data", e.reason, e.log_tail)),
            Ok(_) => {
                return Err(fail(
                    "loading-data",
                    "worker answered with the wrong result kind".into(),
                    String::new(),
                ));
            }
            Err(e) => return Err(fail("loading-data", e.to_string(), String::new())),
        }
        let w = &spec.workload;
        let stage = if w.warmup.is_zero() {
            "measuring"
        } else {
            "warming-up"
        };
        let _ = self.catalog.set_stage(run_id, attempt, stage).await;
        self.changed(job_id);
        let load = RunLoadTask {
            conninfo: Some(conninfo),
            builtin: w.builtin.clone(),
            clients: cell.clients,
            threads: w.threads,
            duration_ms: u64::try_from(w.duration.as_millis()).unwrap_or(u64::MAX),
            warmup_ms: u64::try_from(w.warmup.as_millis()).unwrap_or(u64::MAX),
            protocol: w.protocol.clone(),
            scale: w.scale,
            ..Default::default()
        };
        let timeout = w.duration + w.warmup + Duration::from_secs(600);
        let result = match worker
            .call(run_id, attempt, task::Kind::RunLoad(load), timeout)
            .await
        {
            Ok(Outcome::RunLoad(r)) => r,
            Ok(Outcome::Error(e)) => return Err(fail("measuring", e.reason, e.log_tail)),
            Ok(_) => {
                return Err(fail(
                    "measuring",
                    "worker answered with the wrong result kind".into(),
                    String::new(),
                ));
            }
            Err(e) => return Err(fail("measuring", e.to_string(), String::new())),
        };
        let _ = self.catalog.set_stage(run_id, attempt, "collecting").await;
        Ok(result)
    }
}

fn build_options(spec: &Spec, bs: u32, wal: u32) -> BuildOptions {
    BuildOptions {
        source: Some(SourceSpec {
            tarball: spec.tarball.clone(),
            ..Default::default()
        }),
        block_size_kb: bs,
        wal_block_size_kb: wal,
        configure_flags: spec.configure.clone(),
        ..Default::default()
    }
}

fn tail_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- log tail ---\n{tail}")
    }
}
