//! The `blocklab` command-line client: argument parsing lives in the binary; the commands
//! and their output formatting live here so tests can drive them.

use std::fmt::Write as _;
use std::path::Path;

use blocklab_daemon::security::{Bearer, ClientAuth};
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::*;
use comfy_table::Table;
use tokio_stream::StreamExt;
use tonic::codegen::{Body, Bytes, InterceptedService, StdError};
use tonic::transport::Channel;

pub use blocklab_report::render::{Format, render_compare, render_results};
use blocklab_spec::{JobSpec, Plan, Spec};

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    #[error("{path}: {error}")]
    Spec {
        path: String,
        error: blocklab_spec::SpecError,
    },
    #[error("{error} (set --coordinator or BLOCKLAB_COORDINATOR; with TLS, --ca-cert)")]
    Connect {
        addr: String,
        error: blocklab_daemon::security::SecurityError,
    },
    #[error("{}", .0.message())]
    Rpc(#[from] tonic::Status),
}

/// The CLI's client: TLS when a CA is given, the API token on every request.
pub type Client = ControlClient<InterceptedService<Channel, Bearer>>;

/// Any transport a [`ControlClient`] can run on (a plain or an authenticated channel).
pub trait Transport:
    tonic::client::GrpcService<
        tonic::body::Body,
        Error: Into<StdError>,
        ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
    >
{
}

impl<T> Transport for T where
    T: tonic::client::GrpcService<
            tonic::body::Body,
            Error: Into<StdError>,
            ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
        >
{
}

/// Connects to the coordinator with the shared client endpoint (TLS, connect timeout).
pub async fn connect(addr: &str, auth: &ClientAuth) -> Result<Client, CliError> {
    let channel = blocklab_daemon::security::connect_channel(addr, auth.tls.as_ref())
        .await
        .map_err(|error| CliError::Connect {
            addr: addr.to_string(),
            error,
        })?;
    Ok(
        ControlClient::with_interceptor(channel, Bearer::new(auth.token.as_ref()))
            .max_decoding_message_size(blocklab_daemon::security::CLIENT_MAX_MESSAGE_BYTES),
    )
}

/// Reads and validates a spec file of either kind; nothing is sent anywhere.
pub fn load_spec(path: &Path) -> Result<(String, JobSpec), CliError> {
    let text = std::fs::read_to_string(path).map_err(|error| CliError::Read {
        path: path.display().to_string(),
        error,
    })?;
    let spec = JobSpec::parse(&text).map_err(|error| CliError::Spec {
        path: path.display().to_string(),
        error,
    })?;
    Ok((text, spec))
}

fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.set_header(header.to_vec());
    t
}

/// What `submit --dry-run` prints for either kind of job.
pub fn render_job_plan(spec: &JobSpec) -> String {
    match spec {
        JobSpec::Benchmark(s) => render_plan(s, &s.plan()),
        JobSpec::Probe(p) => format!(
            "probe job {:?}: targets {}, file {} MB, chunks {:?} KB, modes{}{}, fsync block sizes {:?} KB x {} writes, {} repetition(s)\n",
            p.name,
            p.targets.join(", "),
            p.file_size_bytes >> 20,
            p.chunk_sizes_kb,
            if p.buffered { " buffered" } else { "" },
            if p.direct { " direct" } else { "" },
            p.fsync_block_sizes_kb,
            p.fsync_writes,
            p.repetitions
        ),
    }
}

/// The expanded plan, as `submit --dry-run` prints it.
pub fn render_plan(spec: &Spec, plan: &Plan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "job {:?}: {} cells x {} repetitions = {} runs, order {}, {} builds, {} client worker(s)",
        spec.name,
        plan.cells.len(),
        spec.repetitions,
        plan.runs.len(),
        spec.order,
        spec.builds().len(),
        if spec.workload.kind.has_workers() {
            spec.client_workers
        } else {
            0
        }
    );
    let _ = writeln!(out, "workload: {}", spec.workload.describe());
    let mut cells = table(&[
        "cell",
        "label",
        "block size",
        "WAL block size",
        "clients",
        "scale",
        "source",
        "baseline",
    ]);
    for c in &plan.cells {
        cells.add_row(vec![
            c.index.to_string(),
            c.label_in(spec),
            format!("{}K", c.block_size_kb),
            format!("{}K", c.wal_block_size_kb),
            c.clients.to_string(),
            c.scale.to_string(),
            c.source.clone(),
            if c.is_baseline {
                "yes".into()
            } else {
                String::new()
            },
        ]);
    }
    let _ = writeln!(out, "{cells}");
    let mut runs = table(&["#", "cell", "repetition"]);
    for r in &plan.runs {
        runs.add_row(vec![
            (r.sequence + 1).to_string(),
            plan.cells[r.cell_index as usize].label_in(spec),
            (r.repetition + 1).to_string(),
        ]);
    }
    let _ = writeln!(out, "{runs}");
    for (name, w) in &spec.workload_variants {
        let _ = writeln!(
            out,
            "workload {name}: {} for {} (warm-up {}) protocol {}, {} thread(s)",
            w.builtin,
            humantime::format_duration(w.duration),
            humantime::format_duration(w.warmup),
            w.protocol,
            w.threads
        );
    }
    for (name, src) in &spec.sources {
        let _ = writeln!(out, "source {name}: {}", src.describe());
    }
    out
}

/// `blocklab jobs`.
pub fn render_jobs(jobs: &[JobSummary]) -> String {
    jobs_table(jobs).to_string()
}

/// The jobs listing as a table (rendered in any `--format` by `cli_listings`).
pub fn jobs_table(jobs: &[JobSummary]) -> Table {
    let mut t = table(&[
        "job",
        "name",
        "workload",
        "state",
        "runs done/total",
        "failed",
        "db host",
        "created",
    ]);
    for j in jobs {
        t.add_row(vec![
            j.job_id.clone(),
            j.name.clone(),
            j.workload.clone(),
            j.state.clone(),
            format!("{}/{}", j.runs_done, j.runs_total),
            j.runs_failed.to_string(),
            j.db_host_id.clone(),
            j.created_at.clone(),
        ]);
    }
    t
}

fn size(bytes: u32) -> String {
    if bytes == 0 {
        "-".into()
    } else {
        bytes.to_string()
    }
}

pub fn render_job(job: &GetJobResponse) -> String {
    let mut out = String::new();
    if let Some(j) = &job.job {
        let _ = writeln!(
            out,
            "job {} ({}): {}, {}/{} runs done, {} failed, db host {}",
            j.job_id,
            j.name,
            j.state,
            j.runs_done,
            j.runs_total,
            j.runs_failed,
            if j.db_host_id.is_empty() {
                "-"
            } else {
                &j.db_host_id
            }
        );
        if !j.error.is_empty() {
            let _ = writeln!(out, "error: {}", j.error);
        }
    }
    let mut t = table(&[
        "#",
        "cell",
        "rep",
        "attempt",
        "state",
        "stage",
        "block_size",
        "wal_block_size",
        "result",
        "build",
        "error",
    ]);
    for r in &job.runs {
        t.add_row(vec![
            (r.sequence + 1).to_string(),
            r.cell_label.clone(),
            (r.repetition + 1).to_string(),
            r.attempt.to_string(),
            r.state.clone(),
            r.stage.clone(),
            size(r.block_size),
            size(r.wal_block_size),
            if r.state == "done" {
                run_result(r)
            } else {
                "-".into()
            },
            if r.build_key.is_empty() {
                "-".into()
            } else {
                format!(
                    "{}{}",
                    r.build_key,
                    if r.build_reused { " (cached)" } else { "" }
                )
            },
            r.error.lines().next().unwrap_or("").to_string(),
        ]);
    }
    let _ = write!(out, "{t}");
    out
}

/// `blocklab hosts`.
pub fn render_hosts(hosts: &[HostInfo]) -> String {
    hosts_table(hosts).to_string()
}

/// The hosts listing as a table.
pub fn hosts_table(hosts: &[HostInfo]) -> Table {
    let mut t = table(&[
        "host",
        "role",
        "state",
        "address",
        "labels",
        "cpu",
        "memory",
        "last seen",
    ]);
    for h in hosts {
        let facts: serde_json::Value = serde_json::from_str(&h.facts_json).unwrap_or_default();
        let cpu = format!(
            "{} x{}",
            facts["cpu_model"].as_str().unwrap_or("?"),
            facts["cpu_logical"]
                .as_u64()
                .or(facts["cpu_cores"].as_u64())
                .unwrap_or(0)
        );
        let mem = facts["memory_bytes"]
            .as_u64()
            .map(|b| format!("{:.1} GiB", b as f64 / 1073741824.0))
            .unwrap_or_default();
        let state = match (h.up, h.busy_with_run.is_empty()) {
            (false, _) => "down",
            (true, true) => "up",
            (true, false) => "up (busy)",
        };
        t.add_row(vec![
            h.host_id.clone(),
            h.role.clone(),
            state.into(),
            h.address.clone(),
            h.labels.join(","),
            cpu,
            mem,
            h.last_seen.clone(),
        ]);
    }
    t
}

/// Follows a job until it finishes, printing one line per change.
pub async fn watch<T: Transport>(
    client: &mut ControlClient<T>,
    job_id: &str,
    mut out: impl std::io::Write,
) -> Result<Option<JobSummary>, CliError> {
    let mut stream = client
        .watch_job(WatchJobRequest {
            job_id: job_id.to_string(),
        })
        .await?
        .into_inner();
    let mut last = None;
    while let Some(ev) = stream.next().await {
        let ev = ev?;
        if let Some(j) = &ev.job {
            let run = ev
                .run
                .as_ref()
                .map(|r| {
                    format!(
                        " | run {} {} rep {}: {} ({}){}",
                        r.sequence + 1,
                        r.cell_label,
                        r.repetition + 1,
                        r.state,
                        r.stage,
                        if r.state == "done" {
                            format!(" {}", run_result(r))
                        } else if r.live_tps > 0.0 {
                            format!(" {:.1} tps live", r.live_tps)
                        } else {
                            String::new()
                        }
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{} {}: {}/{} runs done, {} failed{}",
                j.job_id, j.state, j.runs_done, j.runs_total, j.runs_failed, run
            );
            last = Some(j.clone());
        }
        if ev.finished {
            break;
        }
    }
    Ok(last)
}

/// `blocklab job ID --run N`: one run with its proof, statistics and settings.
/// A done run's result in a few words: its headline workload metric with the unit (NOTPM,
/// tup/s, seconds), or its tps for pgbench runs.
pub fn run_result(r: &RunInfo) -> String {
    if r.headline_metric.is_empty() {
        return format!("{:.1} tps", r.tps);
    }
    let metric = blocklab_report::stats::Metric::Workload {
        name: r.headline_metric.clone(),
        unit: r.headline_unit.clone(),
        higher_is_better: true,
    };
    let value = blocklab_report::format::num(&metric, r.headline_value);
    match r.headline_unit.as_str() {
        "NOTPM" | "tup/s" => format!("{value} {}", r.headline_unit),
        unit => format!("{} {value} {unit}", r.headline_metric),
    }
}

pub fn render_run_detail(d: &RunDetail) -> String {
    let mut out = String::new();
    if let Some(r) = &d.run {
        let _ = writeln!(
            out,
            "run {} ({}, repetition {}, attempt {}): {} at {}{}",
            r.sequence + 1,
            r.cell_label,
            r.repetition + 1,
            r.attempt,
            r.state,
            r.stage,
            if r.state == "done" {
                format!(", {}", run_result(r))
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "server {} on {}: block_size {} wal_block_size {}, build {}",
            d.server_version,
            d.db_host_id,
            size(r.block_size),
            size(r.wal_block_size),
            r.build_key
        );
        if !r.error.is_empty() {
            let _ = writeln!(out, "error: {}", r.error);
        }
    }
    let _ = writeln!(out, "started {} finished {}", d.started_at, d.finished_at);
    if !d.suspect.is_empty() {
        let _ = writeln!(out, "suspect: {}", d.suspect.join("; "));
    }
    if !d.metrics.is_empty() {
        let mut t = table(&["metric", "value", "unit"]);
        for m in &d.metrics {
            let metric = blocklab_report::stats::Metric::Workload {
                name: m.name.clone(),
                unit: m.unit.clone(),
                higher_is_better: m.higher_is_better,
            };
            t.add_row(vec![
                m.name.clone(),
                blocklab_report::format::num(&metric, m.value),
                m.unit.clone(),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.shares.is_empty() {
        let mut t = table(&[
            "worker",
            "clients",
            "transactions",
            "tps",
            "cpu user s",
            "cpu system s",
        ]);
        for s in &d.shares {
            t.add_row(vec![
                s.worker_host_id.clone(),
                s.clients.to_string(),
                s.transactions.to_string(),
                format!("{:.1}", s.tps),
                format!("{:.2}", s.client_cpu_user_s),
                format!("{:.2}", s.client_cpu_system_s),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.stats.is_empty() {
        let mut t = table(&["server statistic (delta over the window)", "value"]);
        for s in d.stats.iter().filter(|s| s.delta != 0.0) {
            t.add_row(vec![s.name.clone(), format!("{}", s.delta)]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.settings.is_empty() {
        let mut t = table(&["setting", "value", "unit", "source"]);
        for s in &d.settings {
            t.add_row(vec![
                s.name.clone(),
                s.setting.clone(),
                s.unit.clone(),
                s.source.clone(),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    if !d.log_tail.is_empty() {
        let _ = writeln!(out, "--- log tail ---\n{}", d.log_tail);
    }
    out
}

/// Every host's facts, pretty-printed.
pub fn render_host_facts(hosts: &[HostInfo]) -> String {
    let mut out = String::new();
    for h in hosts {
        let facts: serde_json::Value = serde_json::from_str(&h.facts_json).unwrap_or_default();
        let pretty = serde_json::to_string_pretty(&facts).unwrap_or_default();
        let _ = writeln!(out, "{} ({}):\n{pretty}", h.host_id, h.role);
    }
    out
}

/// `blocklab builds`.
pub fn render_builds(builds: &[AgentBuild]) -> String {
    builds_table(builds).to_string()
}

/// The builds listing as a table.
pub fn builds_table(builds: &[AgentBuild]) -> Table {
    let mut t = table(&[
        "host",
        "build key",
        "version",
        "block",
        "WAL block",
        "segsize",
        "flags",
        "MB",
        "built s",
        "last used",
    ]);
    for ab in builds {
        let Some(b) = &ab.build else { continue };
        t.add_row(vec![
            ab.host_id.clone(),
            b.build_key.clone(),
            b.pg_version.clone(),
            format!("{}K", b.block_size_kb),
            format!("{}K", b.wal_block_size_kb),
            if b.segsize_gb == 0 {
                "-".into()
            } else {
                format!("{}G", b.segsize_gb)
            },
            b.configure_flags.join(" "),
            format!("{}", b.size_bytes >> 20),
            format!("{:.0}", b.build_seconds),
            b.last_used_at.clone(),
        ]);
    }
    t
}

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
    if job.job.as_ref().is_none_or(|j| j.kind != "probe") {
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
