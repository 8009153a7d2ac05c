//! Reading a job's `WatchJob` stream: the one loop behind both renderings of `watch`, the
//! plain lines of [`crate::commands::watch`] and the bar of [`crate::progress`].

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{JobEvent, JobSummary, WatchJobRequest};
use tokio_stream::StreamExt;

use crate::client::{CliError, Transport};

/// An open `WatchJob` stream of one job.
pub struct JobWatch {
    stream: tonic::Streaming<JobEvent>,
}

impl JobWatch {
    /// Asks the coordinator for the job's events.
    pub async fn open<T: Transport>(
        client: &mut ControlClient<T>,
        job_id: &str,
    ) -> Result<JobWatch, CliError> {
        let stream = client
            .watch_job(WatchJobRequest {
                job_id: job_id.to_string(),
            })
            .await?
            .into_inner();
        Ok(JobWatch { stream })
    }

    /// Hands every event to `on_event` until the job finishes or the stream ends; returns the
    /// job's last summary.
    pub async fn follow(
        mut self,
        mut on_event: impl FnMut(&JobEvent),
    ) -> Result<Option<JobSummary>, CliError> {
        let mut last = None;
        while let Some(ev) = self.stream.next().await {
            let ev = ev?;
            on_event(&ev);
            if let Some(j) = &ev.job {
                last = Some(j.clone());
            }
            if ev.finished {
                break;
            }
        }
        Ok(last)
    }
}
