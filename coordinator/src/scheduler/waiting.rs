//! Every wait of a job: for its database host (to attach, to return, to be free of another
//! job's run) and for client workers. While it waits, the reason is the job's `waiting`
//! (shown by `watch`, `job` and the dashboard); it waits up to the spec's
//! `placement.host_wait` without failing anything, and stops waiting when it is cancelled.

use std::sync::Arc;
use std::time::Duration;

use super::placement::{Granted, Pinned, Waited, no_agent_reason};
use super::{Scheduler, SchedulerError};
use crate::fleet::HostSession;
use blocklab_spec::HostRole;
use blocklab_spec::{JobState, Stage};

impl Scheduler {
    /// Polls `find` until it yields, waking on host changes and whenever another run leaves
    /// the workers' queue or frees its hosts, for up to `limit`, or until the
    /// job is cancelled. While `find` says why it still waits, that is the job's `waiting`
    /// reason (cleared when the wait ends).
    pub(crate) async fn wait_for<T>(
        &self,
        job_id: &str,
        limit: Duration,
        mut find: impl FnMut() -> Result<T, String>,
    ) -> Waited<T> {
        let deadline = tokio::time::Instant::now() + limit;
        let mut cancelled = self.cancelled(job_id);
        let mut shown: Option<String> = None;
        let outcome = loop {
            // Armed before asking, so a change between the answer and the wait is not missed.
            let moved = self.placement.changed.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            let reason = match find() {
                Ok(found) => break Waited::Got(found),
                Err(reason) => reason,
            };
            if *cancelled.borrow() {
                break Waited::Cancelled;
            }
            if tokio::time::Instant::now() >= deadline {
                break Waited::TimedOut(reason);
            }
            if shown.as_deref() != Some(reason.as_str()) {
                tracing::info!(job_id, reason = %reason, "job waits");
                self.record_waiting(job_id, Some(&reason)).await;
                shown = Some(reason);
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = self.registry.changed.notified() => {}
                _ = &mut moved => {}
                _ = cancelled.changed() => {}
            }
        };
        if shown.is_some() {
            self.record_waiting(job_id, None).await;
        }
        outcome
    }

    async fn record_waiting(&self, job_id: &str, reason: Option<&str>) {
        if let Err(e) = self.catalog.set_job_waiting(job_id, reason).await {
            tracing::error!(job_id, error = %e, "cannot record why a job waits");
        }
        self.changed(job_id);
    }

    /// The agents that are up and match `labels` (and `pinned`, when the job is pinned).
    pub(crate) fn matching_agents(
        &self,
        labels: &[String],
        pinned: Option<&str>,
    ) -> Vec<Arc<HostSession>> {
        self.registry
            .up()
            .into_iter()
            .filter(|s| {
                s.role == HostRole::Agent
                    && pinned.is_none_or(|p| p == s.host_id)
                    && labels.iter().all(|l| s.labels.contains(l))
            })
            .collect()
    }

    /// `n` client workers for one run of `job_id`, first come, first served.
    pub(crate) async fn client_workers(
        &self,
        job_id: &str,
        n: usize,
        limit: Duration,
    ) -> Waited<Granted> {
        if n == 0 {
            return Waited::Got(Vec::new());
        }
        let ticket = self.placement.ticket();
        self.wait_for(job_id, limit, || {
            self.placement.grant(&ticket, &self.registry.up(), n)
        })
        .await
    }

    /// Pins the job to its database host: the one it is pinned to, or the least busy agent
    /// with `labels`, waiting up to `limit`. Without one, the job and its queued runs fail
    /// naming the labels, and the answer is `None` (also when the job was cancelled).
    pub(crate) async fn pin_agent(
        &self,
        job_id: &str,
        labels: &[String],
        pinned: Option<&str>,
        limit: Duration,
    ) -> Result<Option<Pinned>, SchedulerError> {
        let found = self
            .wait_for(job_id, limit, || {
                self.placement
                    .pin(self.matching_agents(labels, pinned))
                    .ok_or_else(|| no_agent_reason(labels, pinned))
            })
            .await;
        let pin = match found {
            Waited::Got(pin) => pin,
            Waited::Cancelled => return Ok(None),
            Waited::TimedOut(_) => {
                let reason = format!(
                    "no database host with labels {labels:?} attached within {} (placement.host_wait)",
                    humantime::format_duration(limit)
                );
                self.catalog
                    .fail_queued_runs(job_id, Stage::Queued, &reason, None)
                    .await?;
                self.catalog
                    .set_job_state(job_id, JobState::Failed, Some(&reason))
                    .await?;
                return Ok(None);
            }
        };
        self.catalog
            .pin_job_host(job_id, &pin.session.host_id)
            .await?;
        tracing::info!(job_id, host_id = %pin.session.host_id, jobs_on_host = self.placement.jobs_on(&pin.session.host_id), "job pinned");
        Ok(Some(pin))
    }

    /// Takes the database host for this job's next step (one job's work at a time per
    /// host), waiting up to `limit` while another job's run holds it. `None`: the wait timed
    /// out (the job's queued runs then failed) or the job was cancelled.
    pub(crate) async fn hold_agent(
        &self,
        job_id: &str,
        agent: &HostSession,
        limit: Duration,
    ) -> Result<Option<tokio::sync::OwnedMutexGuard<()>>, SchedulerError> {
        let host = agent.host_id.clone();
        let found = self
            .wait_for(job_id, limit, || {
                agent.busy.clone().try_lock_owned().map_err(|_| {
                    format!("waiting for database host {host}: busy with another job's run")
                })
            })
            .await;
        match found {
            Waited::Got(g) => Ok(Some(g)),
            Waited::Cancelled => Ok(None),
            Waited::TimedOut(reason) => {
                self.fail_waiting(job_id, &reason, limit).await?;
                Ok(None)
            }
        }
    }

    /// A wait that outlasted `placement.host_wait` fails the job's queued runs.
    pub(crate) async fn fail_waiting(
        &self,
        job_id: &str,
        reason: &str,
        limit: Duration,
    ) -> Result<(), SchedulerError> {
        let reason = format!(
            "still {reason} after {} (placement.host_wait)",
            humantime::format_duration(limit)
        );
        tracing::warn!(job_id, reason = %reason, "job gave up waiting");
        self.catalog
            .fail_queued_runs(job_id, Stage::Queued, &reason, None)
            .await?;
        Ok(())
    }
}
