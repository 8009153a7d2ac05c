//! The `jobs`, `hosts` and `builds` listings as tables (rendered in any `--format` by
//! [`crate::listings`]), and the hosts' facts.

use std::fmt::Write as _;

use blocklab_proto::v1::{AgentBuild, HostInfo, JobSummary, Role};
use blocklab_spec::HostRole;
use comfy_table::Table;

use super::table::table;

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
            role_name(h).into(),
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

/// A host's role as the listings show it: `agent`, `worker` (`unknown` for a value this
/// client does not know).
fn role_name(h: &HostInfo) -> &'static str {
    match Role::try_from(h.role) {
        Ok(Role::Agent) => HostRole::Agent.as_str(),
        Ok(Role::Worker) => HostRole::Worker.as_str(),
        _ => "unknown",
    }
}

/// Every host's facts, pretty-printed.
pub fn render_host_facts(hosts: &[HostInfo]) -> String {
    let mut out = String::new();
    for h in hosts {
        let facts: serde_json::Value = serde_json::from_str(&h.facts_json).unwrap_or_default();
        let pretty = serde_json::to_string_pretty(&facts).unwrap_or_default();
        let _ = writeln!(out, "{} ({}):\n{pretty}", h.host_id, role_name(h));
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
