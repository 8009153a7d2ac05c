//! A TPC-C-like workload as DBT-2 runs it: the nine tables, a loader parallel across
//! workers, the five transactions with the standard mix, NOTPM, and the consistency checks.
//!
//! Steps (`WorkloadStepTask.step`): `schema` (drop, create, load item; one worker),
//! `load` (this worker's warehouses: w with (w - 1) % parts == part), `finish` (keys,
//! DBT-2's indexes, VACUUM ANALYZE), `check` (consistency conditions 1 to 9).

mod check;
mod driver;
mod load;
pub mod rand;
mod run;
mod schema;
mod txn;

use std::time::Instant;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{
    RunLoadResult, RunLoadTask, WorkloadKind, WorkloadMetric, WorkloadStepResult, WorkloadStepTask,
};
use tokio::sync::oneshot;
use tokio_postgres::Client;

use crate::conn::Target;
use crate::engine::control::LoadControl;
use crate::error::WorkerError;

pub use driver::NAMES as TXN_NAMES;
pub use schema::TABLES;

/// The TPC-C cardinalities (clause 1.2).
pub const DISTRICTS: i32 = 10;
pub const CUSTOMERS_PER_DISTRICT: i32 = 3000;
pub const ORDERS_PER_DISTRICT: i32 = 3000;
pub const ITEMS: i32 = 100_000;

/// The TPC-C parameters of a task, validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TpccOptions {
    pub warehouses: u32,
    pub keying_thinking: bool,
    /// Multiplies keying and thinking times; 0 or unset means 1.0.
    pub time_scale: f64,
}

impl TpccOptions {
    pub fn from_kind(kind: Option<&WorkloadKind>) -> Result<TpccOptions, WorkerError> {
        let p = kind.and_then(|k| k.tpcc).unwrap_or_default();
        if p.warehouses == 0 || p.warehouses > 100_000 {
            return Err(WorkerError::InvalidArgument(format!(
                "tpcc warehouses must be between 1 and 100000 (got {})",
                p.warehouses
            )));
        }
        if !p.time_scale.is_finite() || p.time_scale < 0.0 {
            return Err(WorkerError::InvalidArgument(format!(
                "tpcc time_scale must be a non-negative number (got {})",
                p.time_scale
            )));
        }
        Ok(TpccOptions {
            warehouses: p.warehouses,
            keying_thinking: p.keying_thinking,
            time_scale: if p.time_scale == 0.0 {
                1.0
            } else {
                p.time_scale
            },
        })
    }
}

/// The warehouses part `part` of `parts` loads (parts 0 means 1).
pub fn warehouses_of_part(warehouses: u32, part: u32, parts: u32) -> Vec<i32> {
    let parts = parts.max(1);
    (1..=warehouses)
        .filter(|w| (w - 1) % parts == part)
        .filter_map(|w| i32::try_from(w).ok())
        .collect()
}

fn seconds_metric(step: &str, seconds: f64) -> WorkloadMetric {
    WorkloadMetric {
        name: format!("tpcc.{step}_s"),
        value: seconds,
        unit: "s".into(),
        higher_is_better: false,
    }
}

async fn connect(t: &WorkloadStepTask) -> Result<Client, WorkerError> {
    let conninfo = t.conninfo.clone().unwrap_or_default().to_conninfo_string();
    let (client, _task) = Target::parse(&conninfo)?.connect().await?;
    Ok(client)
}

/// Runs one step outside the measured window (see `WorkloadStepTask.step`).
pub async fn step(
    t: &WorkloadStepTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<WorkloadStepResult, WorkerError> {
    let o = TpccOptions::from_kind(t.workload.as_ref())?;
    let parts = t.parts.max(1);
    if t.part >= parts {
        return Err(WorkerError::InvalidArgument(format!(
            "part {} is out of range for {parts} parts",
            t.part
        )));
    }
    if !matches!(t.step.as_str(), "schema" | "load" | "finish" | "check") {
        return Err(WorkerError::InvalidArgument(format!(
            "tpcc step {:?} is unknown; allowed: schema, load, finish, check",
            t.step
        )));
    }
    let started = Instant::now();
    let client = connect(t).await?;
    let stop = ctl.stop.as_ref();
    tracing::info!(step = %t.step, warehouses = o.warehouses, part = t.part, parts, "tpcc step");
    let notes = match t.step.as_str() {
        "schema" => {
            schema::create(&client).await?;
            let n = load::load_items(&client, stop).await?;
            vec![
                format!("created {} tables", schema::TABLES.len()),
                format!("item: {n} rows"),
            ]
        }
        "load" => {
            let mine = warehouses_of_part(o.warehouses, t.part, parts);
            let mut rows = load::Rows::default();
            for (i, w) in mine.iter().enumerate() {
                let t0 = Instant::now();
                load::load_warehouse(&client, *w, stop, &mut rows).await?;
                tracing::info!(
                    warehouse = w,
                    seconds = t0.elapsed().as_secs_f64(),
                    "tpcc warehouse loaded"
                );
                let msg = format!("tpcc warehouse {w} loaded ({}/{})", i + 1, mine.len());
                progress
                    .stage(blocklab_spec::Stage::LoadingData, &msg)
                    .await;
            }
            let mut notes = vec![format!("part {} of {parts}: warehouses {:?}", t.part, mine)];
            notes.extend(rows.0.iter().map(|(t, n)| format!("{t}: {n} rows")));
            notes
        }
        "finish" => schema::finish(&client, stop).await?,
        _ => check::check(&client, stop).await?,
    };
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(step = %t.step, seconds, "tpcc step done");
    Ok(WorkloadStepResult {
        seconds,
        metrics: vec![seconds_metric(&t.step, seconds)],
        notes,
    })
}

/// Runs this worker's share of the measured window: connect, report "ready", wait for `go`
/// (when given), warm up, measure.
pub async fn run(
    t: &RunLoadTask,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<RunLoadResult, WorkerError> {
    run::run(t, progress, ctl, go).await
}
