//! One run of a job: start the cell's server, load the data, take server statistics, run the
//! load on the run's workers (all connected, then started together on the coordinator's go),
//! merge their results, flag what makes the measurement suspect, and write it all at once.

use blocklab_spec::Stage;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::placement::Waited;
use super::retry::{self, retried};
use super::{JobCtx, Scheduler, SchedulerError};
use crate::catalog::{CatalogError, RunChoices, RunRecord, ServerRecord};
use crate::fleet::HostSession;
use crate::fleet::tasks::{BuildOf, RunOf, Server, ServerRequest, Snapshot, TaskError};
use blocklab_spec::{Cell, Spec};

const PREPARE_TIMEOUT: Duration = Duration::from_secs(60 * 60);
pub(crate) const INIT_TIMEOUT: Duration = Duration::from_secs(60 * 60);
const STOP_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const STATS_TIMEOUT: Duration = Duration::from_secs(10 * 60);
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// What every step of one run attempt needs to know.
#[derive(Clone, Copy)]
pub(crate) struct RunCtx<'a> {
    pub spec: &'a Spec,
    pub cell: &'a Cell,
    pub run_id: &'a str,
    pub attempt: u32,
    pub agent: &'a HostSession,
    pub workers: &'a [Arc<HostSession>],
    pub job_id: &'a str,
    /// Page-unit settings holding the cell's memory at its reference's bytes.
    pub held: &'a [(String, String)],
}

/// Why a run did not finish. `lost` means a host vanished (disconnected or silent), so the
/// run may be retried; otherwise the run failed.
#[derive(Debug)]
pub(crate) struct Failure {
    pub stage: Stage,
    pub reason: String,
    pub tail: String,
    pub lost: bool,
}

pub(crate) fn fail(stage: Stage, reason: impl Into<String>, tail: impl Into<String>) -> Failure {
    Failure {
        stage,
        reason: reason.into(),
        tail: tail.into(),
        lost: false,
    }
}

/// A run step that could not be persisted fails the run: nothing is acted on unrecorded.
pub(crate) fn unrecorded(stage: Stage) -> impl FnOnce(CatalogError) -> Failure {
    move |e| {
        tracing::error!(stage = %stage, error = %e, "cannot record a run step");
        fail(stage, format!("catalog: {e}"), "")
    }
}

/// A task that gave no result fails the run at `stage` (or at the stage the host names); a
/// host that is gone loses it.
pub(crate) fn task_failed(stage: Stage) -> impl FnOnce(TaskError) -> Failure {
    move |e| match e {
        TaskError::Failed {
            stage: named,
            reason,
            log_tail,
        } => fail(named.unwrap_or(stage), reason, log_tail),
        TaskError::Call(e) => Failure {
            lost: true,
            ..fail(stage, e.to_string(), "")
        },
        e @ TaskError::WrongKind { .. } => fail(stage, e.to_string(), ""),
    }
}

impl Scheduler {
    pub(crate) async fn execute_run(
        &self,
        job: &JobCtx<'_>,
        cell: &Cell,
        run: &RunRecord,
        held: &mut HeldMemory,
    ) -> Result<(), SchedulerError> {
        let JobCtx {
            job_id,
            spec,
            db_host,
            ..
        } = *job;
        let limit = spec.host_wait;
        // Dropped last: the hosts this run holds are free by then.
        let _freed = self.placement.freed_on_drop();
        let agent = match self
            .wait_for(job_id, limit, || {
                self.registry
                    .get(db_host)
                    .ok_or_else(|| format!("waiting for database host {db_host} to return"))
            })
            .await
        {
            Waited::Got(agent) => agent,
            Waited::Cancelled => return Ok(()),
            Waited::TimedOut(reason) => return self.fail_waiting(job_id, &reason, limit).await,
        };
        let Some(_agent_guard) = self.hold_agent(job_id, &agent, limit).await? else {
            return Ok(());
        };
        let wanted = if spec.cell_workload(cell).kind.has_workers() {
            spec.client_workers as usize
        } else {
            0
        };
        let workers = match self.client_workers(job_id, wanted, limit).await {
            Waited::Got(w) => w,
            Waited::Cancelled => return Ok(()),
            Waited::TimedOut(reason) => return self.fail_waiting(job_id, &reason, limit).await,
        };
        let sessions: Vec<Arc<HostSession>> = workers.iter().map(|(s, _)| s.clone()).collect();
        let run_id = run.run_id.as_str();
        let attempt = self
            .catalog
            .begin_attempt(
                run_id,
                &agent.host_id,
                sessions.first().map_or("", |s| s.host_id.as_str()),
            )
            .await?;
        self.changed(job_id);
        tracing::info!(job_id, run_id, attempt, cell = %cell.label_in(spec), repetition = run.repetition, "run started");
        let mut cancelled = self.cancelled(job_id);
        let hosts: Vec<String> = sessions
            .iter()
            .chain(std::iter::once(&agent))
            .map(|h| h.host_id.clone())
            .collect();
        let outcome = tokio::select! {
            o = async {
                let held = self.held_memory(job_id, spec, job.plan, cell, &agent, held).await?;
                let ctx = RunCtx {
                    spec,
                    cell,
                    run_id,
                    attempt,
                    agent: &agent,
                    workers: &sessions,
                    job_id,
                    held: &held,
                };
                self.measure(&ctx).await
            } => Some(o),
            gone = self.host_down(&hosts) => Some(Err(Failure {
                lost: true,
                ..fail(Stage::Measuring, format!("host {gone} went down during the run"), "")
            })),
            _ = cancelled.wait_for(|c| *c) => None,
        };
        let this = RunOf { run_id, attempt };
        if matches!(&outcome, Some(Err(_))) {
            // A failed step ends the run at once: whatever still runs for this attempt on
            // the workers (a load parked waiting for go, a data load) is stopped.
            for host in &sessions {
                let _ = host.cancel(this).await;
            }
        }
        let Some(outcome) = outcome else {
            // Stop the load and the server of the cancelled attempt promptly.
            for host in sessions.iter().chain(std::iter::once(&agent)) {
                let _ = host.cancel(this).await;
            }
            let _ = agent
                .stop_server(RunOf { run_id, attempt }, STOP_TIMEOUT)
                .await;
            self.catalog.cancel_run(run_id, attempt).await?;
            tracing::info!(run_id, attempt, "run cancelled");
            return Ok(());
        };
        self.clear_live(run_id);
        if let Err(e) = agent
            .stop_server(RunOf { run_id, attempt }, STOP_TIMEOUT)
            .await
        {
            tracing::warn!(run_id, error = %e, "stopping the server failed");
        }
        match outcome {
            Ok(o) => {
                let stored = retried("run result", retry::OUTCOME, || {
                    self.catalog.finish_run_with(run_id, attempt, &o)
                })
                .await?;
                if !stored {
                    tracing::warn!(run_id, attempt, "result of a stale attempt discarded");
                }
                tracing::info!(run_id, tps = o.result.tps_excluding_connections, metrics = o.metrics.len(), suspect = ?o.suspect, "run done");
            }
            Err(f) if f.lost => {
                tracing::warn!(run_id, attempt, stage = %f.stage, reason = %f.reason, "run lost");
                retried("run lost", retry::OUTCOME, || {
                    self.catalog.lose_run(run_id, attempt, f.stage, &f.reason)
                })
                .await?;
            }
            Err(f) => {
                tracing::warn!(run_id, stage = %f.stage, reason = %f.reason, "run failed");
                retried("run failure", retry::OUTCOME, || {
                    self.catalog
                        .fail_run(run_id, attempt, f.stage, &f.reason, &f.tail)
                })
                .await?;
            }
        }
        Ok(())
    }

    /// Resolves with the id of the first of `hosts` that the registry no longer holds (it
    /// detached or missed its heartbeat timeout).
    async fn host_down(&self, hosts: &[String]) -> String {
        loop {
            if let Some(gone) = hosts.iter().find(|h| self.registry.get(h).is_none()) {
                return gone.clone();
            }
            let _ =
                tokio::time::timeout(Duration::from_millis(500), self.registry.changed.notified())
                    .await;
        }
    }

    pub(crate) async fn prepare(&self, ctx: &RunCtx<'_>) -> Result<Server, Failure> {
        let RunCtx {
            spec,
            cell,
            run_id,
            attempt,
            agent,
            workers,
            job_id,
            held,
        } = *ctx;
        let point = cell.build_point();
        let request = ServerRequest {
            build: BuildOf {
                spec,
                point: &point,
            },
            settings: with_held(spec.cell_settings(cell), held),
            allowed_client_addresses: workers.iter().map(|w| w.address.clone()).collect(),
            separate_wal: spec.layout.separate_wal,
            archive_wal: spec.layout.archive_wal,
        };
        let server = agent
            .prepare_server(RunOf { run_id, attempt }, request, PREPARE_TIMEOUT)
            .await
            .map_err(task_failed(Stage::Starting))?;
        let conninfo = &server.conninfo;
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
            .map_err(|e| fail(Stage::Starting, e.to_string(), ""))?;
        let choices = RunChoices {
            wal_dir: Some(server.wal_dir.clone()).filter(|w| !w.is_empty()),
            postmaster_start_time: Some(server.postmaster_start_time.clone())
                .filter(|t| !t.is_empty()),
            ..RunChoices::default()
        };
        self.catalog
            .record_run_choices(run_id, attempt, &choices)
            .await
            .map_err(|e| fail(Stage::Starting, e.to_string(), ""))?;
        self.changed(job_id);
        let (want_bs, want_wal) = (cell.block_size_kb * 1024, cell.wal_block_size_kb * 1024);
        if server.block_size != want_bs || server.wal_block_size != want_wal {
            return Err(fail(
                Stage::Starting,
                format!(
                    "live server reports block_size {} / wal_block_size {}, the cell asks for {want_bs} / {want_wal}",
                    server.block_size, server.wal_block_size
                ),
                "",
            ));
        }
        Ok(server)
    }

    pub(crate) async fn wait_ready(
        &self,
        progress: &mut tokio::sync::broadcast::Receiver<crate::fleet::ProgressEvent>,
        task_ids: &[String],
    ) -> Result<(), Failure> {
        let mut ready: HashMap<&str, bool> = task_ids.iter().map(|t| (t.as_str(), false)).collect();
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        while ready.values().any(|r| !r) {
            match tokio::time::timeout_at(deadline, progress.recv()).await {
                Ok(Ok(p))
                    if p.report == crate::fleet::Progress::Stage(blocklab_spec::Stage::Ready) =>
                {
                    if let Some(r) = ready.get_mut(p.task_id.as_str()) {
                        *r = true;
                    }
                }
                Ok(Ok(_)) | Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {}
                Ok(Err(_)) => return Err(fail(Stage::Measuring, "progress channel closed", "")),
                Err(_) => {
                    return Err(fail(
                        Stage::Measuring,
                        format!("workers did not connect their clients within {READY_TIMEOUT:?}"),
                        "",
                    ));
                }
            }
        }
        Ok(())
    }

    pub(crate) async fn snapshot(
        &self,
        agent: &HostSession,
        run_id: &str,
        attempt: u32,
        checkpoint: bool,
    ) -> Result<Snapshot, Failure> {
        self.snapshot_task(agent, run_id, attempt, checkpoint, false)
            .await
    }

    /// A snapshot once the window's sessions closed (`settle_sessions`), or after a CHECKPOINT.
    pub(crate) async fn snapshot_task(
        &self,
        agent: &HostSession,
        run_id: &str,
        attempt: u32,
        checkpoint_first: bool,
        settle_sessions: bool,
    ) -> Result<Snapshot, Failure> {
        agent
            .snapshot_stats(
                RunOf { run_id, attempt },
                checkpoint_first,
                settle_sessions,
                STATS_TIMEOUT,
            )
            .await
            .map_err(task_failed(Stage::Measuring))
    }
}

/// Held settings per memory reference cell, for one job (see `memory.rs`).
pub(crate) type HeldMemory = HashMap<u32, Vec<(String, String)>>;

/// The cell's settings with the held ones on top (they replace a spec value of the same
/// name, which the reference resolved to the same bytes).
fn with_held(
    mut settings: Vec<(String, String)>,
    held: &[(String, String)],
) -> Vec<(String, String)> {
    for (name, value) in held {
        settings.retain(|(n, _)| n != name);
        settings.push((name.clone(), value.clone()));
    }
    settings
}
