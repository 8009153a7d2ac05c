//! The scheduler: one driver per job. It pins the job to a database host, has every build
//! made before the first measurement, then executes the runs in their planned order, one at
//! a time per host, persisting each step before acting on it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::catalog::{BuildRecord, Catalog, CatalogError};
use crate::fleet::tasks::{BuildOf, TaskError};
use crate::fleet::{HostSession, Progress, ProgressEvent, Registry};
use blocklab_spec::{JobKind, JobPlan, JobState, RunState, Spec, SpecError, Stage};

mod adaptive;
mod db_hosts;
mod histogram;
mod kinds;
mod memory;
pub mod merge;
mod pgbench;
mod placement;
mod probe;
mod reset;
mod retry;
mod run;
mod settings;
mod waiting;
mod wal;
mod window;
pub mod workload_metrics;

const BUILD_TIMEOUT: Duration = Duration::from_secs(60 * 60);
/// Attempts a run gets when hosts vanish under it (then it fails).
pub const MAX_ATTEMPTS: u32 = 3;

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
    /// Live tps per (run, worker host) while runs measure.
    live: std::sync::Mutex<std::collections::HashMap<(String, String), f64>>,
    /// How busy each database host is; the queue for client workers.
    placement: Arc<placement::Placement>,
    /// The build task each job is waiting for now: task id → job id.
    build_tasks: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// Per running job: set to true when the job is cancelled.
    cancels: std::sync::Mutex<std::collections::HashMap<String, watch::Sender<bool>>>,
    /// The catalog path this coordinator's dashboard names in its pages, when it serves one:
    /// a finished job's page is then rendered and kept when the job finishes, not at its
    /// first view.
    dashboard_catalog: std::sync::OnceLock<String>,
}

impl Scheduler {
    pub fn new(catalog: Catalog, registry: Arc<Registry>) -> Arc<Self> {
        Arc::new(Self {
            catalog,
            registry,
            events: broadcast::channel(1024).0,
            placement: Arc::default(),
            cancels: std::sync::Mutex::new(std::collections::HashMap::new()),
            live: std::sync::Mutex::new(std::collections::HashMap::new()),
            build_tasks: std::sync::Mutex::new(std::collections::HashMap::new()),
            dashboard_catalog: std::sync::OnceLock::new(),
        })
    }

    /// A dashboard serves this catalog, naming `catalog_path` in its pages: keep each job's
    /// page when the job finishes.
    pub fn keep_pages(&self, catalog_path: String) {
        let _ = self.dashboard_catalog.set(catalog_path);
    }

    fn cancels(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, watch::Sender<bool>>> {
        self.cancels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn build_tasks(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, String>> {
        self.build_tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn live(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<(String, String), f64>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live tps of a measuring run, summed over its workers (0 when none is known).
    pub fn live_tps(&self, run_id: &str) -> f64 {
        self.live()
            .iter()
            .filter(|((r, _), _)| r == run_id)
            .map(|(_, v)| v)
            .sum()
    }

    /// Forgets a run's live figures (when it leaves the measured window).
    pub(crate) fn clear_live(&self, run_id: &str) {
        self.live().retain(|(r, _), _| r != run_id);
    }

    /// A receiver that turns true when `job_id` is cancelled.
    pub(crate) fn cancelled(&self, job_id: &str) -> watch::Receiver<bool> {
        self.cancels()
            .entry(job_id.to_string())
            .or_insert_with(|| watch::channel(false).0)
            .subscribe()
    }

    /// Cancels a job: queued runs at once, the running one through its driver.
    pub async fn cancel_job(&self, job_id: &str) -> Result<(String, u64), SchedulerError> {
        let outcome = self.catalog.cancel_job(job_id).await?;
        if let Some(tx) = self.cancels().get(job_id) {
            let _ = tx.send(true);
        }
        self.changed(job_id);
        tracing::info!(job_id, state = %outcome.0, runs = outcome.1, "job cancel requested");
        Ok(outcome)
    }

    pub(crate) fn changed(&self, job_id: &str) {
        let _ = self.events.send(job_id.to_string());
    }

    /// Starts driving a job in the background.
    pub fn start_job(self: &Arc<Self>, job_id: String) {
        let this = self.clone();
        tokio::spawn(async move {
            let result = this.drive(&job_id).await;
            this.cancels().remove(&job_id);
            if let Err(e) = result {
                tracing::error!(job_id = %job_id, error = %e, "job driver failed");
                let _ = this
                    .catalog
                    .set_job_state(&job_id, JobState::Failed, Some(&e.to_string()))
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
                    Ok(ProgressEvent {
                        report: Progress::Live(tps),
                        run_id,
                        host_id,
                        ..
                    }) => {
                        this.live().insert((run_id, host_id), tps);
                        let _ = this.events.send(String::new());
                    }
                    Ok(ProgressEvent {
                        report: Progress::Build(build),
                        task_id,
                        ..
                    }) => {
                        let job_id = this.build_tasks().get(&task_id).cloned();
                        if let Some(job_id) = job_id {
                            this.record_build_progress(&job_id, Some(&build)).await;
                        }
                    }
                    Ok(ProgressEvent {
                        report: Progress::Stage(stage),
                        run_id,
                        attempt,
                        ..
                    }) if !run_id.is_empty() && stage != Stage::Ready => {
                        match this.catalog.set_stage(&run_id, attempt, stage).await {
                            Ok(true) => {
                                let _ = this.events.send(String::new());
                            }
                            Ok(false) => {}
                            Err(e) => {
                                tracing::error!(run_id, stage = %stage, error = %e, "cannot record a run's stage")
                            }
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
        let (spec, plan) = match self.catalog.job_plan(job_id).await? {
            JobPlan::Benchmark { spec, plan } => (spec, plan),
            JobPlan::Probe(probe) => {
                return self
                    .drive_probe(job_id, &probe, job.db_host_id.as_deref())
                    .await;
            }
        };
        tracing::info!(job_id, name = %spec.name, "job started");
        let Some(pins) = self
            .pin_hosts(job_id, &spec, job.db_host_id.as_deref())
            .await?
        else {
            return Ok(());
        };
        self.catalog
            .set_job_state(job_id, JobState::Building, None)
            .await?;
        self.changed(job_id);
        for pin in &pins {
            let agent = &pin.session;
            let Some(guard) = self.hold_agent(job_id, agent, spec.host_wait).await? else {
                return self.finish_job(job_id).await;
            };
            self.make_builds(job_id, &spec, agent).await?;
            let accepted = self.check_settings(job_id, &spec, agent).await?;
            drop(guard);
            self.placement.changed.notify_waiters();
            if !accepted {
                return Ok(());
            }
        }
        self.catalog
            .set_job_state(job_id, JobState::Running, None)
            .await?;
        self.changed(job_id);
        let cancelled = self.cancelled(job_id);
        let slots = pins.len() as u32;
        let mut held: Vec<_> = pins.iter().map(|_| Default::default()).collect();
        loop {
            let queued: Vec<_> = self
                .catalog
                .runs(job_id)
                .await?
                .into_iter()
                .filter(|r| r.state == RunState::Queued)
                .collect();
            if queued.is_empty() {
                // Lost runs are retried on the same host, up to a bound.
                if self.catalog.requeue_lost(job_id, MAX_ATTEMPTS).await? == 0
                    && (*cancelled.borrow() || !self.add_round(job_id, &spec, &plan).await?)
                {
                    break;
                }
                continue;
            }
            // One lane per database host, all at once: each runs its slot's runs in order.
            let lanes = pins
                .iter()
                .zip(held.iter_mut())
                .enumerate()
                .map(|(k, (pin, held))| {
                    let mine: Vec<_> = queued
                        .iter()
                        .filter(|r| r.repetition % slots == k as u32)
                        .collect();
                    let cancelled = cancelled.clone();
                    let (spec, plan) = (&spec, &plan);
                    async move {
                        let job = JobCtx {
                            job_id,
                            spec,
                            plan,
                            db_host: &pin.session.host_id,
                        };
                        for run in mine {
                            if *cancelled.borrow() {
                                break;
                            }
                            let Some(cell) = plan.cells.get(run.cell_index as usize) else {
                                continue;
                            };
                            self.execute_run(&job, cell, run, held).await?;
                            self.changed(job_id);
                        }
                        Ok::<(), SchedulerError>(())
                    }
                });
            futures::future::try_join_all(lanes).await?;
            if *cancelled.borrow() {
                break;
            }
        }
        self.finish_job(job_id).await
    }

    /// Marks a job done when every run finished, failed otherwise.
    pub(crate) async fn finish_job(&self, job_id: &str) -> Result<(), SchedulerError> {
        let job = self.catalog.job(job_id).await?;
        if job.state == JobState::Cancelled {
            tracing::info!(job_id, "job cancelled");
            return Ok(());
        }
        let (state, error) = if job.runs_done == job.runs_total {
            (JobState::Done, None)
        } else {
            (
                JobState::Failed,
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
        tracing::info!(job_id, state = %state, "job finished");
        // A benchmark's results, computed once now and kept, so no later read computes them
        // again (a probe's are its rows).
        if job.kind == JobKind::Benchmark
            && let Err(e) = crate::results::query_results(&self.catalog, "", job_id, "").await
        {
            tracing::warn!(job_id, error = %e, "the finished job's results were not computed");
        }
        // Its dashboard page likewise, so that even its first view reads one row.
        if job.kind == JobKind::Benchmark
            && let Some(path) = self.dashboard_catalog.get()
            && let Err(e) = crate::dashboard::job_page::job_page(&self.catalog, path, job_id).await
        {
            tracing::warn!(job_id, error = %e, "the finished job's page was not kept");
        }
        Ok(())
    }

    async fn make_builds(
        &self,
        job_id: &str,
        spec: &Spec,
        agent: &HostSession,
    ) -> Result<(), SchedulerError> {
        let plan = spec.plan();
        for point in spec.builds() {
            let task_id = uuid::Uuid::new_v4().to_string();
            self.build_tasks()
                .insert(task_id.clone(), job_id.to_string());
            let build = BuildOf {
                spec,
                point: &point,
            };
            let answer = agent.build(&task_id, build, BUILD_TIMEOUT).await;
            self.build_tasks().remove(&task_id);
            self.record_build_progress(job_id, None).await;
            let failure = match answer {
                Ok(b) => {
                    tracing::info!(job_id, build_key = %b.build_key, reused = b.reused, seconds = b.build_seconds, "build ready");
                    let rec = BuildRecord {
                        build_key: b.build_key,
                        block_size_kb: point.block_size_kb,
                        wal_block_size_kb: point.wal_block_size_kb,
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
                Err(TaskError::Failed {
                    reason, log_tail, ..
                }) => Some(format!("{reason}{}", tail_suffix(&log_tail))),
                Err(e @ TaskError::WrongKind { .. }) => Some(format!("agent {e}")),
                Err(e) => Some(e.to_string()),
            };
            if let Some(reason) = failure {
                tracing::warn!(job_id, ?point, reason = %reason, "build failed");
                let affected: Vec<u32> = plan
                    .cells
                    .iter()
                    .filter(|c| c.build_point() == point)
                    .map(|c| c.index)
                    .collect();
                self.catalog
                    .fail_queued_runs(job_id, Stage::Building, &reason, Some(&affected))
                    .await?;
            }
            self.changed(job_id);
        }
        Ok(())
    }
}

impl Scheduler {
    /// Records the latest progress of the build a job is making (`None`: none now).
    async fn record_build_progress(
        &self,
        job_id: &str,
        build: Option<&blocklab_spec::BuildProgress>,
    ) {
        match self.catalog.set_build_progress(job_id, build).await {
            Ok(()) => self.changed(job_id),
            Err(e) => {
                tracing::error!(job_id, error = %e, "cannot record build progress")
            }
        }
    }
}

/// What every run of a job shares.
pub(crate) struct JobCtx<'a> {
    pub job_id: &'a str,
    pub spec: &'a Spec,
    pub plan: &'a blocklab_spec::Plan,
    pub db_host: &'a str,
}

/// The agent's build options for one build point of the spec.
pub(crate) fn tail_suffix(tail: &str) -> String {
    if tail.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- log tail ---\n{tail}")
    }
}
