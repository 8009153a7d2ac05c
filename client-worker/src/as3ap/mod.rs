//! An AS3AP-like suite as OSDB runs it: the five tables and their generator, the timed
//! single-user query list, and the multi-user mixes reporting tuples per second.

use blocklab_proto::fleet::ProgressSink;
use blocklab_proto::{RunLoadResult, RunLoadTask, WorkloadStepResult, WorkloadStepTask};
use tokio::sync::oneshot;

use crate::error::WorkerError;
use crate::load::LoadControl;

/// Runs one step outside the measured window (see `WorkloadStepTask.step`).
pub async fn step(
    t: &WorkloadStepTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<WorkloadStepResult, WorkerError> {
    let _ = (t, progress, ctl);
    Err(WorkerError::Run("not implemented yet".into()))
}

/// Runs this worker's share of the measured window: connect, report "ready", wait for `go`
/// (when given), warm up, measure.
pub async fn run(
    t: &RunLoadTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<RunLoadResult, WorkerError> {
    let _ = (t, progress, ctl, go);
    Err(WorkerError::Run("not implemented yet".into()))
}
