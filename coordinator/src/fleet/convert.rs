//! What hosts report becomes domain types here: progress reports (load results and workload
//! metrics convert in blocklab-proto, to blocklab-measure's types).

use blocklab_proto::v1::TaskProgress;
use blocklab_spec::Stage;

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
