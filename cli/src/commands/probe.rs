//! I/O probe jobs: their results in place of a benchmark's.

use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetJobRequest, ProbeResultsRequest, ProbeResultsResponse};
use blocklab_spec::JobKind;

use blocklab_report::{self as report, render::Format, render::csv_field};

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

/// The results of a probe job in `format`, or `None` if the job is a benchmark.
pub async fn probe_results_if_probe<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    format: Format,
) -> Result<Option<String>, CliError> {
    Ok(probe_job(client, job_id)
        .await?
        .map(|r| render_probe(&r, format)))
}

const HEADER: [&str; 8] = [
    "target",
    "mode",
    "chunk",
    "MB/s",
    "system CPU s",
    "latency avg µs",
    "latency p99 µs",
    "runs",
];

/// A probe job's results as a table, markdown, CSV or JSON (one object per row, numbers as
/// numbers; write latencies only for `write-fdatasync`, as the table shows them).
pub fn render_probe(r: &ProbeResultsResponse, format: Format) -> String {
    let rows = || r.rows.iter().map(probe_row);
    match format {
        Format::Json => probe_json(r),
        Format::Markdown => {
            let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
            let rows: Vec<Vec<String>> = rows().collect();
            format!(
                "I/O probe on {}\n\n{}",
                r.db_host_id,
                report::render::markdown(&header, &rows)
            )
        }
        Format::Csv => {
            let mut out = format!("db_host_id,{}\n", HEADER.join(","));
            for row in rows() {
                let fields: Vec<String> = row.iter().map(|f| csv_field(f)).collect();
                out.push_str(&format!(
                    "{},{}\n",
                    csv_field(&r.db_host_id),
                    fields.join(",")
                ));
            }
            out
        }
        Format::Table => {
            let mut t = table(&HEADER);
            for row in rows() {
                t.add_row(row);
            }
            format!("I/O probe on {}\n{t}", r.db_host_id)
        }
    }
}

fn probe_json(r: &ProbeResultsResponse) -> String {
    let rows: Vec<serde_json::Value> = r
        .rows
        .iter()
        .map(|row| {
            let write = row.mode == "write-fdatasync";
            serde_json::json!({
                "target": row.target,
                "mode": row.mode,
                "chunk_bytes": row.chunk_bytes,
                "mb_per_s": row.mb_per_s,
                "system_cpu_s": row.system_cpu_s,
                "latency_avg_us": write.then_some(row.latency_avg_us),
                "latency_p99_us": write.then_some(row.latency_p99_us),
                "runs": row.runs,
            })
        })
        .collect();
    let doc = serde_json::json!({ "db_host_id": r.db_host_id, "rows": rows });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

fn probe_row(row: &blocklab_proto::v1::ProbeSummary) -> Vec<String> {
    let chunk = if row.chunk_bytes >= 1 << 20 {
        format!("{}M", row.chunk_bytes >> 20)
    } else {
        format!("{}K", row.chunk_bytes >> 10)
    };
    let write = row.mode == "write-fdatasync";
    vec![
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
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_proto::v1::ProbeSummary;

    fn probe() -> ProbeResultsResponse {
        let row = |mode: &str, chunk_bytes: u32, mb_per_s: f64| ProbeSummary {
            target: "data".into(),
            mode: mode.into(),
            chunk_bytes,
            mb_per_s,
            system_cpu_s: 0.25,
            latency_avg_us: 180.0,
            latency_p99_us: 410.0,
            runs: 3,
        };
        ProbeResultsResponse {
            db_host_id: "db1".into(),
            rows: vec![
                row("read-direct", 8192, 612.5),
                row("write-fdatasync", 8 << 20, 95.0),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn a_probe_renders_in_every_format() {
        let md = render_probe(&probe(), Format::Markdown);
        assert!(
            md.starts_with("I/O probe on db1\n\n| target | mode | chunk | MB/s |"),
            "{md}"
        );
        assert!(
            md.contains("| data | read-direct | 8K | 612.5 | 0.250 | - | - | 3 |"),
            "{md}"
        );
        assert!(
            md.contains("| data | write-fdatasync | 8M | 95.0 | 0.250 | 180 | 410 | 3 |"),
            "{md}"
        );
        let csv = render_probe(&probe(), Format::Csv);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                "db_host_id,target,mode,chunk,MB/s,system CPU s,latency avg µs,latency p99 µs,runs",
                "db1,data,read-direct,8K,612.5,0.250,-,-,3",
                "db1,data,write-fdatasync,8M,95.0,0.250,180,410,3",
            ]
        );
        let json: serde_json::Value =
            serde_json::from_str(&render_probe(&probe(), Format::Json)).expect("json");
        assert_eq!(json["db_host_id"], "db1");
        assert_eq!(json["rows"][0]["chunk_bytes"], 8192);
        assert_eq!(json["rows"][0]["latency_avg_us"], serde_json::Value::Null);
        assert_eq!(json["rows"][1]["latency_p99_us"], 410.0);
        let text = render_probe(&probe(), Format::Table);
        assert!(
            text.starts_with("I/O probe on db1\n") && text.contains("612.5"),
            "{text}"
        );
    }
}
