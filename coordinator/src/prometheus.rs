//! The coordinator's Prometheus-style metrics, served at `/metrics` on the dashboard port:
//! jobs and runs by state (from the catalog), hosts up (from the registry), heartbeats
//! received, how late they were taken in, and task errors (counted by the Fleet service).

use blocklab_daemon::metrics::Exposition;
use blocklab_spec::HostRole;

use crate::catalog::{Catalog, CatalogError};
use crate::fleet::{HEARTBEAT_LAG, HEARTBEATS_RECEIVED, PROGRESS_REFUSED, Registry, TASK_ERRORS};

async fn by_state(catalog: &Catalog, table: &str) -> Result<Vec<(String, u64)>, CatalogError> {
    let sql = match table {
        "jobs" => "SELECT state, COUNT(*) FROM jobs GROUP BY state ORDER BY state",
        _ => "SELECT state, COUNT(*) FROM runs GROUP BY state ORDER BY state",
    };
    let rows: Vec<(String, i64)> = sqlx::query_as(sql).fetch_all(catalog.reader()).await?;
    Ok(rows
        .into_iter()
        .map(|(s, n)| (s, u64::try_from(n).unwrap_or(0)))
        .collect())
}

/// The whole exposition text.
pub async fn render(catalog: &Catalog, registry: &Registry) -> Result<String, CatalogError> {
    let jobs = by_state(catalog, "jobs").await?;
    let runs = by_state(catalog, "runs").await?;
    let up = registry.up();
    let count = |role: HostRole| up.iter().filter(|s| s.role == role).count() as u64;
    Ok(Exposition::new()
        .labeled_gauge(
            "blocklab_jobs",
            "Jobs in the catalog by state.",
            "state",
            &jobs,
        )
        .labeled_gauge(
            "blocklab_runs",
            "Runs in the catalog by state.",
            "state",
            &runs,
        )
        .gauge(
            "blocklab_hosts_up",
            "Agents and workers attached and heartbeating.",
            up.len() as u64,
        )
        .labeled_gauge(
            "blocklab_hosts_up_by_role",
            "Hosts up by role.",
            "role",
            &[
                ("agent".into(), count(HostRole::Agent)),
                ("worker".into(), count(HostRole::Worker)),
            ],
        )
        .counter(
            "blocklab_heartbeats_received_total",
            "Heartbeats received from agents and workers.",
            HEARTBEATS_RECEIVED.get(),
        )
        .histogram(
            "blocklab_heartbeat_lag_seconds",
            "How late heartbeats were taken in: receipt minus the host's send time.",
            &HEARTBEAT_LAG,
        )
        .counter(
            "blocklab_task_errors_total",
            "Task results that reported an error.",
            TASK_ERRORS.get(),
        )
        .counter(
            "blocklab_progress_refused_total",
            "Progress reports for a task, run or attempt not pending on the sending session.",
            PROGRESS_REFUSED.get(),
        )
        .finish())
}
