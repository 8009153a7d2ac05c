//! The `Control` gRPC service: what the CLI calls.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use blocklab_proto::v1::control_server::Control;
use blocklab_proto::v1::*;
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::catalog::{JobRecord, RunRecord};
use crate::error::status;
use crate::results;
use crate::scheduler::Scheduler;
use blocklab_spec::{Files, JobPlan, RunState, Stage};

/// Parses and plans a spec (with the files sent beside it) off the async threads: a large
/// matrix takes a while, and the coordinator's sessions and heartbeats must not wait for it.
/// Gives the text back with the plan.
async fn plan(text: String, seed: Option<u64>, files: Files) -> Result<(String, JobPlan), Status> {
    tokio::task::spawn_blocking(move || {
        let job = JobPlan::parse_with(&text, seed, &files).map_err(|e| status(&e))?;
        Ok((text, job))
    })
    .await
    .map_err(|e| Status::internal(format!("planning the spec failed: {e}")))?
}

/// A job's random seed when its spec names none: positive as a TOML integer, so a spec can
/// name it to rerun the job's draws.
fn new_seed() -> u64 {
    (uuid::Uuid::new_v4().as_u64_pair().0 >> 1).max(1)
}

/// `{:?}` of a caller's value, cut to 64 characters.
fn shown(value: &str) -> String {
    match value.char_indices().nth(64) {
        Some((cut, _)) => format!("{:?}... ({} bytes)", &value[..cut], value.len()),
        None => format!("{value:?}"),
    }
}

pub struct ControlService {
    pub scheduler: Arc<Scheduler>,
    pub catalog_path: String,
    /// Whether this coordinator leads (`leader.rs`).
    pub role: tokio::sync::watch::Receiver<crate::leader::Role>,
}

fn summary(j: &JobRecord) -> JobSummary {
    blocklab_measure::job::JobSummary::from(j).into()
}

fn run_choices(c: crate::catalog::StoredChoices) -> RunChoices {
    RunChoices {
        os_cache_dropped: c.os_cache_dropped,
        server_restarted: c.server_restarted,
        checkpoint_before: c.checkpoint_before,
        wal_dir: c.wal_dir,
        stats_start_at: c.stats_start_at,
        stats_end_at: c.stats_end_at,
        fpi_source: c.fpi_source,
    }
}

fn run_info(r: &RunRecord) -> RunInfo {
    RunInfo {
        run_id: r.run_id.clone(),
        cell_index: r.cell_index,
        repetition: r.repetition,
        sequence: r.sequence,
        attempt: r.attempt,
        state: r.state.to_string(),
        stage: r.stage.to_string(),
        error: r.error.clone().unwrap_or_default(),
        cell_label: r.cell_label.clone(),
        block_size: r.block_size,
        wal_block_size: r.wal_block_size,
        tps: r.tps.unwrap_or(0.0),
        build_key: r.build_key.clone().unwrap_or_default(),
        build_reused: r.build_reused,
        headline_metric: r.headline.as_ref().map(|h| h.0.clone()).unwrap_or_default(),
        headline_value: r.headline.as_ref().map_or(0.0, |h| h.1),
        headline_unit: r.headline.as_ref().map(|h| h.2.clone()).unwrap_or_default(),
        ..Default::default()
    }
}

fn check_job_id(id: &str) -> Result<(), Status> {
    uuid::Uuid::parse_str(id).map(|_| ()).map_err(|_| {
        Status::invalid_argument(format!("job_id: {} is not a job id (a UUID)", shown(id)))
    })
}

type EventStream = Pin<Box<dyn Stream<Item = Result<JobEvent, Status>> + Send>>;

impl ControlService {
    /// The tonic service, with Control's message limit.
    pub fn into_server(self) -> blocklab_proto::v1::control_server::ControlServer<Self> {
        blocklab_proto::v1::control_server::ControlServer::new(self)
            .max_decoding_message_size(blocklab_daemon::security::CONTROL_MAX_MESSAGE_BYTES)
    }
}

#[tonic::async_trait]
impl Control for ControlService {
    async fn get_leader(
        &self,
        _request: Request<GetLeaderRequest>,
    ) -> Result<Response<GetLeaderResponse>, Status> {
        let role = self.role.borrow().clone();
        let lease = self.scheduler.catalog.leader().await?;
        let (leading, epoch) = match role {
            crate::leader::Role::Leader { epoch } => (true, epoch),
            crate::leader::Role::Standby { .. } => (false, lease.as_ref().map_or(0, |l| l.epoch)),
        };
        // An expired lease names no leader.
        let leader_address = lease
            .filter(|l| l.expires_in_ms > 0)
            .map(|l| l.address)
            .unwrap_or_default();
        Ok(Response::new(GetLeaderResponse {
            leading,
            epoch,
            leader_address,
        }))
    }

    async fn submit_job(
        &self,
        request: Request<SubmitJobRequest>,
    ) -> Result<Response<SubmitJobResponse>, Status> {
        let req = request.into_inner();
        let (text, files): (String, Files) = (req.spec_toml, req.files.into_iter().collect());
        let catalog = &self.scheduler.catalog;
        // The one parse of this submission: from here on the coordinator reads the stored plan.
        let sent = files.len();
        let (text, job) = plan(text, None, files).await?;
        let job = crate::pilot::choose_windows(catalog, job).await?;
        let job = job.with_random_seed(new_seed());
        let job_id = catalog.insert_job(&text, &job).await?;
        let (cells, runs) = job.size();
        tracing::info!(job_id = %job_id, cells, runs, files = sent, random_seed = ?job.random_seed(), "job submitted");
        self.scheduler.start_job(job_id.clone());
        Ok(Response::new(SubmitJobResponse {
            job_id,
            cells: u32::try_from(cells).unwrap_or(u32::MAX),
            runs: u32::try_from(runs).unwrap_or(u32::MAX),
        }))
    }

    async fn rerun_job(
        &self,
        request: Request<RerunJobRequest>,
    ) -> Result<Response<SubmitJobResponse>, Status> {
        let req = request.into_inner();
        check_job_id(&req.job_id)?;
        let catalog = &self.scheduler.catalog;
        let old = catalog.job(&req.job_id).await?;
        let stored = catalog.job_plan(&req.job_id).await?;
        let files: Files = stored
            .user_files()
            .into_iter()
            .map(|(_, f)| (f.name.clone(), f.text.clone()))
            .collect();
        let (order_seed, random_seed) = if req.same_seed {
            (old.seed, stored.random_seed().unwrap_or_else(new_seed))
        } else {
            (None, new_seed())
        };
        let (_, job) = plan(old.spec_toml.clone(), order_seed, files).await?;
        let job = crate::pilot::choose_windows(catalog, job).await?;
        let job = job.with_random_seed(random_seed);
        let job_id = catalog
            .insert_job_rerun(&old.spec_toml, &job, Some(&req.job_id))
            .await?;
        let (cells, runs) = job.size();
        tracing::info!(job_id = %job_id, rerun_of = %req.job_id, same_seed = req.same_seed, cells, runs, "job resubmitted");
        self.scheduler.start_job(job_id.clone());
        Ok(Response::new(SubmitJobResponse {
            job_id,
            cells: u32::try_from(cells).unwrap_or(u32::MAX),
            runs: u32::try_from(runs).unwrap_or(u32::MAX),
        }))
    }

    async fn list_jobs(
        &self,
        _: Request<ListJobsRequest>,
    ) -> Result<Response<ListJobsResponse>, Status> {
        let jobs = self.scheduler.catalog.jobs().await?;
        Ok(Response::new(ListJobsResponse {
            jobs: jobs.iter().map(summary).collect(),
        }))
    }

    async fn get_job(
        &self,
        request: Request<GetJobRequest>,
    ) -> Result<Response<GetJobResponse>, Status> {
        let req = request.into_inner();
        let id = req.job_id;
        check_job_id(&id)?;
        let catalog = &self.scheduler.catalog;
        let job = catalog.job(&id).await?;
        let runs = catalog.runs(&id).await?;
        let run_detail = if req.run == 0 {
            None
        } else {
            let run = runs
                .iter()
                .find(|r| r.sequence + 1 == req.run)
                .ok_or_else(|| {
                    Status::invalid_argument(format!(
                        "run: this job has runs 1 to {}, not {}",
                        runs.len(),
                        req.run
                    ))
                })?;
            let d = catalog.run_detail(&run.run_id).await?;
            let load = catalog.run_load_detail(&run.run_id).await?;
            Some(RunDetail {
                statements: load
                    .statements
                    .into_iter()
                    .map(|s| StatementLatency {
                        script: s.0,
                        position: s.1,
                        command: s.2,
                        count: s.3,
                        latency_avg_ms: s.4,
                        failures: s.5,
                    })
                    .collect(),
                schedule_lag_avg_ms: load.schedule_lag_avg_ms,
                schedule_lag_max_ms: load.schedule_lag_max_ms,
                late: load.late,
                skipped: load.skipped,
                random_seed: load.random_seed,
                run: Some(run_info(run)),
                stats: d
                    .stats
                    .into_iter()
                    .map(|(name, delta)| StatDelta { name, delta })
                    .collect(),
                settings: d
                    .settings
                    .into_iter()
                    .map(|(name, setting, unit, source)| EffectiveSetting {
                        name,
                        setting,
                        unit,
                        source,
                    })
                    .collect(),
                suspect: d.suspect,
                log_tail: run.log_tail.clone().unwrap_or_default(),
                shares: d
                    .shares
                    .into_iter()
                    .map(|s| WorkerShare {
                        worker_host_id: s.0,
                        clients: s.1,
                        transactions: s.2,
                        tps: s.3,
                        client_cpu_user_s: s.4,
                        client_cpu_system_s: s.5,
                    })
                    .collect(),
                db_host_id: d.db_host_id,
                server_version: d.server_version,
                started_at: d.started_at,
                finished_at: d.finished_at,
                metrics: d
                    .metrics
                    .into_iter()
                    .map(|(name, value, unit, higher_is_better)| WorkloadMetric {
                        name,
                        value,
                        unit,
                        higher_is_better,
                    })
                    .collect(),
                choices: Some(run_choices(d.choices)),
            })
        };
        Ok(Response::new(GetJobResponse {
            job: Some(summary(&job)),
            runs: runs.iter().map(run_info).collect(),
            spec_toml: job.spec_toml,
            run_detail,
        }))
    }

    type WatchJobStream = EventStream;

    async fn watch_job(
        &self,
        request: Request<WatchJobRequest>,
    ) -> Result<Response<Self::WatchJobStream>, Status> {
        let id = request.into_inner().job_id;
        check_job_id(&id)?;
        let catalog = self.scheduler.catalog.clone();
        let scheduler = self.scheduler.clone();
        catalog.job(&id).await?;
        let mut events = self.scheduler.events.subscribe();
        let stream = async_stream(move |tx| async move {
            let mut last: Option<(JobSummary, Vec<RunInfo>)> = None;
            loop {
                let job = match catalog.job(&id).await {
                    Ok(j) => j,
                    Err(e) => {
                        let _ = tx.send(Err(Status::from(e))).await;
                        return;
                    }
                };
                let records = catalog.runs(&id).await.unwrap_or_default();
                let runs: Vec<RunInfo> = records
                    .iter()
                    .map(|r| RunInfo {
                        live_tps: if r.state == RunState::Running && r.stage == Stage::Measuring {
                            scheduler.live_tps(&r.run_id)
                        } else {
                            0.0
                        },
                        ..run_info(r)
                    })
                    .collect();
                let s = summary(&job);
                let finished = job.is_finished();
                let prev_runs = last.as_ref().map(|(_, r)| r.clone()).unwrap_or_default();
                if last.as_ref().is_none_or(|(ls, lr)| ls != &s || lr != &runs) {
                    let changed_run = runs.iter().find(|r| !prev_runs.contains(r)).cloned();
                    if tx
                        .send(Ok(JobEvent {
                            job: Some(s.clone()),
                            run: changed_run,
                            finished,
                        }))
                        .await
                        .is_err()
                    {
                        return;
                    }
                    last = Some((s, runs));
                }
                if finished {
                    return;
                }
                let _ = tokio::time::timeout(Duration::from_secs(1), events.recv()).await;
            }
        });
        Ok(Response::new(stream))
    }

    async fn list_hosts(
        &self,
        _: Request<ListHostsRequest>,
    ) -> Result<Response<ListHostsResponse>, Status> {
        let registry = &self.scheduler.registry;
        let hosts = self.scheduler.catalog.hosts().await?;
        let hosts = hosts
            .into_iter()
            .map(|h| {
                let live = registry.get(&h.host_id);
                HostInfo {
                    up: live.is_some(),
                    busy_with_run: live
                        .as_ref()
                        .filter(|s| s.busy.try_lock().is_err())
                        .map(|_| "yes".to_string())
                        .unwrap_or_default(),
                    host_id: h.host_id,
                    role: crate::fleet::convert::role(h.role).into(),
                    labels: h.labels,
                    address: h.address,
                    version: h.version,
                    last_seen: h.last_seen,
                    facts_json: h.facts_json,
                }
            })
            .collect();
        Ok(Response::new(ListHostsResponse { hosts }))
    }

    async fn probe_results(
        &self,
        request: Request<ProbeResultsRequest>,
    ) -> Result<Response<ProbeResultsResponse>, Status> {
        let id = request.into_inner().job_id;
        check_job_id(&id)?;
        let catalog = &self.scheduler.catalog;
        let job = catalog.job(&id).await?;
        let rows = catalog
            .probe_summary(&id)
            .await?
            .into_iter()
            .map(|r| ProbeSummary {
                target: r.target,
                mode: r.mode,
                chunk_bytes: r.chunk_bytes,
                mb_per_s: r.mb_per_s,
                system_cpu_s: r.system_cpu_s,
                latency_avg_us: r.latency_avg_us,
                latency_p99_us: r.latency_p99_us,
                runs: r.runs,
            })
            .collect();
        Ok(Response::new(ProbeResultsResponse {
            job_id: id,
            db_host_id: job.db_host_id.unwrap_or_default(),
            rows,
        }))
    }

    async fn cancel_job(
        &self,
        request: Request<CancelJobRequest>,
    ) -> Result<Response<CancelJobResponse>, Status> {
        let id = request.into_inner().job_id;
        check_job_id(&id)?;
        let (state, n) = self
            .scheduler
            .cancel_job(&id)
            .await
            .map_err(|e| crate::error::status(&e))?;
        Ok(Response::new(CancelJobResponse {
            state,
            runs_cancelled: u32::try_from(n).unwrap_or(u32::MAX),
        }))
    }

    async fn list_builds(
        &self,
        _: Request<ListBuildsRequest>,
    ) -> Result<Response<ListBuildsResponse>, Status> {
        let mut builds = Vec::new();
        for host in self.scheduler.registry.up() {
            if host.role != blocklab_spec::HostRole::Agent {
                continue;
            }
            let kind = task::Kind::ListBuilds(ListBuildsTask {});
            match host.call("", 0, kind, Duration::from_secs(30)).await {
                Ok(task_result::Outcome::ListBuilds(r)) => {
                    builds.extend(r.builds.into_iter().map(|b| AgentBuild {
                        host_id: host.host_id.clone(),
                        build: Some(b),
                    }));
                }
                Ok(other) => {
                    tracing::warn!(host_id = %host.host_id, outcome = ?other, "agent could not list builds")
                }
                Err(e) => {
                    tracing::warn!(host_id = %host.host_id, error = %e, "agent could not list builds")
                }
            }
        }
        Ok(Response::new(ListBuildsResponse { builds }))
    }

    async fn query_results(
        &self,
        request: Request<QueryResultsRequest>,
    ) -> Result<Response<QueryResultsResponse>, Status> {
        let req = request.into_inner();
        check_job_id(&req.job_id)?;
        let r = results::query_results(
            &self.scheduler.catalog,
            &self.catalog_path,
            &req.job_id,
            &req.metric,
        )
        .await?;
        Ok(Response::new(r.into()))
    }

    async fn export_job(
        &self,
        request: Request<ExportJobRequest>,
    ) -> Result<Response<JobExport>, Status> {
        let req = request.into_inner();
        check_job_id(&req.job_id)?;
        let r = results::export_job(
            &self.scheduler.catalog,
            &self.catalog_path,
            &req.job_id,
            &req.metric,
            req.include_samples,
        )
        .await?;
        Ok(Response::new(r.into()))
    }

    async fn compare_jobs(
        &self,
        request: Request<CompareJobsRequest>,
    ) -> Result<Response<CompareJobsResponse>, Status> {
        let req = request.into_inner();
        check_job_id(&req.job_a).map_err(|_| {
            Status::invalid_argument(format!(
                "job_a: {} is not a job id (a UUID)",
                shown(&req.job_a)
            ))
        })?;
        check_job_id(&req.job_b).map_err(|_| {
            Status::invalid_argument(format!(
                "job_b: {} is not a job id (a UUID)",
                shown(&req.job_b)
            ))
        })?;
        let r = results::compare_jobs(&self.scheduler.catalog, &req.job_a, &req.job_b, &req.metric)
            .await?;
        Ok(Response::new(r.into()))
    }
}

/// A stream fed by a spawned producer.
fn async_stream<F, Fut>(producer: F) -> EventStream
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<JobEvent, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(producer(tx));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}
