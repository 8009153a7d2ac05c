//! A job's export (`ExportJob`): what `plot` and `report` draw, and what `blocklab export`
//! prints as JSON.

use blocklab_measure::job::JobExport;
use blocklab_proto::v1::ExportJobRequest;
use blocklab_proto::v1::control_client::ControlClient;

use crate::client::{CliError, Transport, answer};

/// The job's export with `metric`'s statistics (empty: the job's headline), and every run's
/// per-second samples when `samples` is set. The wire answer becomes the domain value here,
/// once.
pub async fn job_export<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    metric: &str,
    samples: bool,
) -> Result<JobExport, CliError> {
    let reply = client
        .export_job(ExportJobRequest {
            job_id: job_id.to_string(),
            metric: metric.to_string(),
            include_samples: samples,
        })
        .await;
    Ok(answer(reply)?.into())
}

/// `blocklab export`: the export as one JSON document (its field names as in
/// `blocklab_measure::job::JobExport`).
pub fn export_json(export: &JobExport) -> String {
    serde_json::to_string_pretty(export).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::job::{ExportRun, JobSummary};

    #[test]
    fn the_json_carries_the_job_and_its_runs() {
        let export = JobExport {
            job: Some(JobSummary {
                job_id: "j1".into(),
                state: "done".into(),
                ..Default::default()
            }),
            runs: vec![ExportRun {
                sequence: 0,
                state: "done".into(),
                ..Default::default()
            }],
            metric: "tps".into(),
            ..Default::default()
        };
        let v: serde_json::Value = serde_json::from_str(&export_json(&export)).expect("json");
        assert_eq!(v["job"]["job_id"], "j1");
        assert_eq!(v["runs"][0]["state"], "done");
        assert_eq!(v["metric"], "tps");
        assert!(v["runs"][0]["result"].is_null());
    }
}
