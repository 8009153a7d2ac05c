//! What hosts report becomes domain types here: progress reports (load results and workload
//! metrics convert in blocklab-proto, to blocklab-measure's types); and the domain enums the
//! coordinator sends become wire enums (steps, roles).

use blocklab_proto::v1::{Role, TaskProgress, WorkloadStepName};
use blocklab_spec::{HostRole, Stage, WorkloadStep};

use super::{Progress, ProgressEvent};

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
