//! Running the tasks of the workload kinds from their wire form: parse, run the kind's
//! domain entry point, convert the outcome back.

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    ConnInfo, InitDataResult, InitDataTask, RunLoadResult, RunLoadTask, WorkloadStepResult,
    WorkloadStepTask,
};
use blocklab_script::Protocol;
use blocklab_spec::{Stage, WorkloadStep};
use tokio::sync::oneshot;

use super::convert::{self, Workload};
use crate::engine::control::LoadControl;
use crate::error::WorkerError;
use crate::{as3ap, init, tpcc};

/// Loads the pgbench tables at `scale` into the database `conn` names.
pub async fn init_data(conn: &ConnInfo, scale: u32) -> Result<InitDataResult, WorkerError> {
    init::init_data_conninfo(&conn.to_conninfo_string(), scale)
        .await
        .map(convert::init_result)
}

/// A run's data load (task `InitData`): pgbench's tables with the task's init options, then
/// the user's SQL file; each part timed.
pub async fn init_task(
    t: &InitDataTask,
    progress: &ProgressSink,
) -> Result<InitDataResult, WorkerError> {
    let conn = t
        .conninfo
        .as_ref()
        .ok_or_else(|| WorkerError::InvalidArgument("init-data task without conninfo".into()))?;
    let conninfo = conn.to_conninfo_string();
    let mut out = InitDataResult::default();
    if t.pgbench_tables {
        let o = convert::init_options(t)?;
        progress
            .stage(
                Stage::LoadingData,
                &format!("pgbench -i -s {} -I {}", o.scale, o.steps),
            )
            .await;
        let r = init::init_with(&conninfo, &o).await?;
        out = convert::init_result(r);
    }
    if let Some(sql) = &t.sql {
        progress
            .stage(Stage::LoadingData, &format!("init sql {}", sql.name))
            .await;
        out.sql_seconds = init::run_sql(&conninfo, &sql.name, &sql.text).await?;
        out.seconds += out.sql_seconds;
    }
    Ok(out)
}

/// Runs this worker's share of the measured window of a TPC-C-like or AS3AP-like run
/// (`kind` decides; the task's own kind name is not looked at again).
pub async fn run_workload(
    kind: Workload,
    t: &RunLoadTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<RunLoadResult, WorkerError> {
    let w = t.workload.as_ref();
    let outcome = match kind {
        Workload::Tpcc => {
            let o = convert::tpcc_options(w)?;
            let p = convert::window_params(t, Protocol::Simple);
            tpcc::run(&p, &o, progress, ctl, go).await?
        }
        Workload::As3ap => {
            let rows = convert::as3ap_rows(w)?;
            let mix = convert::as3ap_mix(w)?;
            let p = convert::window_params(t, convert::as3ap_protocol(t)?);
            as3ap::run(&p, rows, mix, progress, ctl, go).await?
        }
        Workload::Pgbench => {
            return Err(WorkerError::InvalidArgument(
                "pgbench runs go through the load engine, not a workload kind".into(),
            ));
        }
    };
    Ok(outcome.into())
}

/// Runs one step of a TPC-C-like or AS3AP-like workload outside the measured window.
pub async fn workload_step(
    kind: Workload,
    t: &WorkloadStepTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<WorkloadStepResult, WorkerError> {
    let step = convert::workload_step(t)?;
    run_step(kind, step, t, progress, ctl).await
}

/// Runs `step` (the task's, converted) of a TPC-C-like or AS3AP-like workload.
pub(super) async fn run_step(
    kind: Workload,
    step: WorkloadStep,
    t: &WorkloadStepTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<WorkloadStepResult, WorkerError> {
    let w = t.workload.as_ref();
    let p = convert::step_params(t);
    let outcome = match kind {
        Workload::Tpcc => {
            let o = convert::tpcc_options(w)?;
            tpcc::step(step.try_into()?, &o, &p, progress, ctl).await?
        }
        Workload::As3ap => {
            let rows = convert::as3ap_rows(w)?;
            as3ap::step(step.try_into()?, rows, &p, progress, ctl).await?
        }
        Workload::Pgbench => {
            return Err(WorkerError::InvalidArgument(format!(
                "workload kind {:?} has no steps; allowed: tpcc, as3ap",
                w.map_or("", |w| w.kind.as_str())
            )));
        }
    };
    Ok(convert::step_result(outcome))
}
