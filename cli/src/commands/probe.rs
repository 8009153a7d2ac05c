//! I/O probe jobs: their results in place of a benchmark's.

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetJobRequest, ProbeResultsRequest, ProbeResultsResponse};
use blocklab_spec::JobKind;

use super::table::table;
use crate::client::{CliError, Transport};

/// A probe job's results, or `None` if the job is a benchmark.
pub async fn probe_job<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
) -> Result<Option<ProbeResultsResponse>, CliError> {
    let job = client
        .get_job(GetJobRequest {
            job_id: job_id.to_string(),
            run: 0,
        })
        .await?
        .into_inner();
    if job
        .job
        .as_ref()
        .is_none_or(|j| j.kind.parse::<JobKind>().ok() != Some(JobKind::Probe))
    {
        return Ok(None);
    }
    let r = client
        .probe_results(ProbeResultsRequest {
            job_id: job_id.to_string(),
        })
        .await?
        .into_inner();
    Ok(Some(r))
}

/// The results table of a probe job, or `None` if the job is a benchmark.
pub async fn probe_results_if_probe<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
) -> Result<Option<String>, CliError> {
    Ok(probe_job(client, job_id).await?.map(|r| render_probe(&r)))
}

/// A probe job's results as a table.
pub fn render_probe(r: &ProbeResultsResponse) -> String {
    let mut t = table(&[
        "target",
        "mode",
        "chunk",
        "MB/s",
        "system CPU s",
        "latency avg µs",
        "latency p99 µs",
        "runs",
    ]);
    for row in &r.rows {
        let chunk = if row.chunk_bytes >= 1 << 20 {
            format!("{}M", row.chunk_bytes >> 20)
        } else {
            format!("{}K", row.chunk_bytes >> 10)
        };
        let write = row.mode == "write-fdatasync";
        t.add_row(vec![
            row.target.clone(),
            row.mode.clone(),
            chunk,
            format!("{:.1}", row.mb_per_s),
            format!("{:.3}", row.system_cpu_s),
            if write {
                format!("{:.0}", row.latency_avg_us)
            } else {
                "-".into()
            },
            if write {
                format!("{:.0}", row.latency_p99_us)
            } else {
                "-".into()
            },
            row.runs.to_string(),
        ]);
    }
    format!("I/O probe on {}\n{t}", r.db_host_id)
}
