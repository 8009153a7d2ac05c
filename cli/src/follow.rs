//! Reading a job's `WatchJob` stream: the one loop behind both renderings of `watch`, the
//! plain lines of [`crate::commands::watch`] and the bar of [`crate::progress`].

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{JobEvent, JobSummary, WatchJobRequest};
use tokio_stream::StreamExt;

use crate::client::{CliError, Transport, answer};

/// An open `WatchJob` stream of one job.
pub struct JobWatch {
    stream: tonic::Streaming<JobEvent>,
    opened: bool,
}

impl JobWatch {
    /// Asks the coordinator for the job's events.
    pub async fn open<T: Transport>(
        client: &mut ControlClient<T>,
        job_id: &str,
    ) -> Result<JobWatch, CliError> {
        let stream = answer(
            client
                .watch_job(WatchJobRequest {
                    job_id: job_id.to_string(),
                })
                .await,
        )?;
        Ok(JobWatch {
            stream,
            opened: false,
        })
    }

    /// The next event, `None` once the stream ends. The first event is the job as it stands:
    /// its run is only the first of the job's runs, not one that changed, so it is left out.
    pub async fn next(&mut self) -> Result<Option<JobEvent>, CliError> {
        let Some(ev) = self.stream.next().await else {
            return Ok(None);
        };
        let mut ev = ev?;
        if !std::mem::replace(&mut self.opened, true) {
            ev.run = None;
        }
        Ok(Some(ev))
    }

    /// Hands every event to `on_event` until the job finishes or the stream ends; returns the
    /// job's last summary.
    pub async fn follow(
        mut self,
        mut on_event: impl FnMut(&JobEvent),
    ) -> Result<Option<JobSummary>, CliError> {
        let mut last = None;
        while let Some(ev) = self.next().await? {
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
