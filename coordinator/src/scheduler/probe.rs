//! Driving an I/O probe job: every run asks the pinned agent to probe one target directory
//! and stores a row per mode and chunk size.

use std::time::Duration;

use blocklab_proto::v1::{RunProbeTask, task, task_result::Outcome};

use super::{Scheduler, SchedulerError};
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
            let task = RunProbeTask {
                target: target.clone(),
                file_size_bytes: p.file_size_bytes,
                chunk_sizes: p.chunk_sizes_kb.iter().map(|k| k * 1024).collect(),
                buffered: p.buffered,
                direct: p.direct,
                fsync_block_sizes: p.fsync_block_sizes_kb.iter().map(|k| k * 1024).collect(),
                fsync_writes: p.fsync_writes,
            };
            match agent
                .call(
                    &run.run_id,
                    attempt,
                    task::Kind::RunProbe(task),
                    PROBE_TIMEOUT,
                )
                .await
            {
                Ok(Outcome::RunProbe(r)) => {
                    self.catalog
                        .finish_probe_run(job_id, &run.run_id, attempt, &agent.host_id, target, &r)
                        .await?;
                }
                Ok(Outcome::Error(e)) => {
                    self.catalog
                        .fail_run(
                            &run.run_id,
                            attempt,
                            Stage::Measuring,
                            &e.reason,
                            &e.log_tail,
                        )
                        .await?;
                }
                Ok(_) => {
                    self.catalog
                        .fail_run(
                            &run.run_id,
                            attempt,
                            Stage::Measuring,
                            "agent answered with the wrong result kind",
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
