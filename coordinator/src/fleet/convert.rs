//! What hosts report becomes domain types here: progress reports, load results and workload
//! metrics; and the domain enums the coordinator sends become wire enums (steps, roles).

use blocklab_proto::v1::{Role, TaskProgress, WorkloadStepName};
use blocklab_spec::{HostRole, Stage, WorkloadStep};

use super::{Progress, ProgressEvent};
use crate::load::{LoadResult, Metric, Sample, Statement, TxnType};

impl ProgressEvent {
    /// The domain form of a host's report; `None` (logged) for a stage this coordinator
    /// does not know.
    pub(super) fn from_wire(host_id: &str, p: TaskProgress) -> Option<Self> {
        let report = if let Some(tps) = p.live_tps {
            Progress::Live(tps)
        } else if let Some(b) = p.build {
            match b.step.parse() {
                Ok(step) => Progress::Build(blocklab_spec::BuildProgress {
                    block_size_kb: b.block_size_kb,
                    wal_block_size_kb: b.wal_block_size_kb,
                    step,
                    percent: b.percent.filter(|v| v.is_finite()),
                    estimated: b.estimated,
                    eta_seconds: b.eta_seconds.map(u64::from),
                }),
                Err(e) => {
                    tracing::warn!(host_id, task_id = %p.task_id, error = %e, "build progress ignored");
                    return None;
                }
            }
        } else {
            match p.stage.parse::<Stage>() {
                Ok(stage) => Progress::Stage(stage),
                Err(e) => {
                    tracing::warn!(host_id, run_id = %p.run_id, error = %e, "progress report ignored");
                    return None;
                }
            }
        };
        Some(Self {
            host_id: host_id.to_string(),
            task_id: p.task_id,
            run_id: p.run_id,
            attempt: p.attempt,
            report,
        })
    }
}

impl From<blocklab_proto::RunLoadResult> for LoadResult {
    fn from(r: blocklab_proto::RunLoadResult) -> Self {
        LoadResult {
            transactions: r.transactions,
            failures: r.failures,
            retries: r.retries,
            skipped: r.skipped,
            late: r.late,
            tps_including_connections: r.tps_including_connections,
            tps_excluding_connections: r.tps_excluding_connections,
            latency_avg_ms: r.latency_avg_ms,
            latency_stddev_ms: r.latency_stddev_ms,
            latency_p50_ms: r.latency_p50_ms,
            latency_p90_ms: r.latency_p90_ms,
            latency_p99_ms: r.latency_p99_ms,
            latency_p999_ms: r.latency_p999_ms,
            latency_max_ms: r.latency_max_ms,
            connection_time_ms: r.connection_time_ms,
            measured_seconds: r.measured_seconds,
            client_cpu_user_s: r.client_cpu_user_s,
            client_cpu_system_s: r.client_cpu_system_s,
            schedule_lag_avg_ms: r.schedule_lag_avg_ms,
            schedule_lag_max_ms: r.schedule_lag_max_ms,
            statements: r
                .statements
                .into_iter()
                .map(|s| Statement {
                    script_index: s.script_index,
                    script: s.script,
                    position: s.position,
                    command: s.command,
                    count: s.count,
                    latency_sum_ms: s.latency_sum_ms,
                    failures: s.failures,
                })
                .collect(),
            samples: r
                .samples
                .into_iter()
                .map(|s| Sample {
                    second: s.second,
                    transactions: s.transactions,
                    latency_avg_ms: s.latency_avg_ms,
                    failures: s.failures,
                })
                .collect(),
            latency_histogram: r.latency_histogram,
            random_seed: r.random_seed,
            clients: r.clients,
            txn_types: r
                .txn_types
                .into_iter()
                .map(|t| TxnType {
                    name: t.name,
                    count: t.count,
                    rollbacks: t.rollbacks,
                    failures: t.failures,
                    latency_histogram: t.latency_histogram,
                    rows: t.rows,
                })
                .collect(),
        }
    }
}

impl From<blocklab_proto::WorkloadMetric> for Metric {
    fn from(m: blocklab_proto::WorkloadMetric) -> Self {
        Metric {
            name: m.name,
            value: m.value,
            unit: m.unit,
            higher_is_better: m.higher_is_better,
        }
    }
}

/// The wire form of a workload step.
pub(crate) fn step_name(step: WorkloadStep) -> WorkloadStepName {
    match step {
        WorkloadStep::Schema => WorkloadStepName::WorkloadStepSchema,
        WorkloadStep::Load => WorkloadStepName::WorkloadStepLoad,
        WorkloadStep::Finish => WorkloadStepName::WorkloadStepFinish,
        WorkloadStep::Check => WorkloadStepName::WorkloadStepCheck,
        WorkloadStep::SingleUser => WorkloadStepName::WorkloadStepSingleUser,
    }
}

/// The wire form of a host role.
pub(crate) fn role(role: HostRole) -> Role {
    match role {
        HostRole::Agent => Role::Agent,
        HostRole::Worker => Role::Worker,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_and_role_has_a_specified_wire_value() {
        for s in WorkloadStep::ALL {
            assert_ne!(step_name(*s), WorkloadStepName::WorkloadStepUnspecified);
        }
        for r in HostRole::ALL {
            assert_ne!(role(*r), Role::Unspecified);
        }
    }
}
