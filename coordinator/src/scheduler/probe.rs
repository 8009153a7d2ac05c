//! Driving an I/O probe job: every run asks the pinned agent to probe one target directory
//! and stores a row per mode and chunk size.

use std::time::Duration;

use super::{Scheduler, SchedulerError};
use crate::fleet::tasks::{ProbeRequest, RunOf, TaskError};
use blocklab_spec::{JobState, ProbeSpec, RunState, Stage};

const PROBE_TIMEOUT: Duration = Duration::from_secs(2 * 60 * 60);

impl Scheduler {
    pub(crate) async fn drive_probe(
        &self,
        job_id: &str,
        p: &ProbeSpec,
        pinned: Option<&str>,
    ) -> Result<(), SchedulerError> {
        let limit = blocklab_spec::DEFAULT_HOST_WAIT;
        let Some(pin) = self
            .pin_agent(job_id, &p.db_host_labels, pinned, limit)
            .await?
        else {
            return Ok(());
        };
        let agent = pin.session.clone();
        self.catalog
            .set_job_state(job_id, JobState::Running, None)
            .await?;
        self.changed(job_id);
        for run in self.catalog.runs(job_id).await? {
            if run.state != RunState::Queued {
                continue;
            }
            let Some(target) = p.targets.get(run.cell_index as usize) else {
                continue;
            };
            let Some(_guard) = self.hold_agent(job_id, &agent, limit).await? else {
                break;
            };
            let attempt = self
                .catalog
                .begin_attempt(&run.run_id, &agent.host_id, "")
                .await?;
            let _ = self
                .catalog
                .set_stage(&run.run_id, attempt, Stage::Measuring)
                .await;
            self.changed(job_id);
            let probe = ProbeRequest {
                target: target.clone(),
                file_size_bytes: p.file_size_bytes,
                chunk_sizes: p.chunk_sizes_kb.iter().map(|k| k * 1024).collect(),
                buffered: p.buffered,
                direct: p.direct,
                fsync_block_sizes: p.fsync_block_sizes_kb.iter().map(|k| k * 1024).collect(),
                fsync_writes: p.fsync_writes,
            };
            let of = RunOf {
                run_id: &run.run_id,
                attempt,
            };
            match agent.run_probe(of, probe, PROBE_TIMEOUT).await {
                Ok(r) => {
                    self.catalog
                        .finish_probe_run(job_id, &run.run_id, attempt, &agent.host_id, target, &r)
                        .await?;
                }
                Err(TaskError::Failed {
                    reason, log_tail, ..
                }) => {
                    self.catalog
                        .fail_run(&run.run_id, attempt, Stage::Measuring, &reason, &log_tail)
                        .await?;
                }
                Err(e @ TaskError::WrongKind { .. }) => {
                    self.catalog
                        .fail_run(
                            &run.run_id,
                            attempt,
                            Stage::Measuring,
                            &format!("agent {e}"),
                            "",
                        )
                        .await?;
                }
                Err(e) => {
                    self.catalog
                        .fail_run(&run.run_id, attempt, Stage::Measuring, &e.to_string(), "")
                        .await?;
                }
            }
            self.changed(job_id);
        }
        self.finish_job(job_id).await
    }
}
