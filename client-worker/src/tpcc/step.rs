//! The steps outside the measured window: schema, this worker's part of the load, finish,
//! check.

use std::time::Instant;

use blocklab_daemon::fleet::ProgressSink;
use tokio_postgres::Client;

use super::params::{TpccOptions, TpccStep, warehouses_of_part};
use super::{check, load, schema};
use crate::conn::Target;
use crate::engine::control::LoadControl;
use crate::engine::window::{StepOutcome, StepParams};
use crate::error::WorkerError;
use blocklab_measure::Metric;

async fn connect(t: &StepParams) -> Result<Client, WorkerError> {
    let conninfo = t
        .conninfo
        .as_deref()
        .ok_or_else(|| WorkerError::InvalidArgument("conninfo is missing".into()))?;
    let (client, _task) = Target::parse(conninfo)?.connect().await?;
    Ok(client)
}

/// Runs one step outside the measured window.
pub async fn step(
    step: TpccStep,
    o: &TpccOptions,
    t: &StepParams,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<StepOutcome, WorkerError> {
    let parts = t.parts.max(1);
    if t.part >= parts {
        return Err(WorkerError::InvalidArgument(format!(
            "part {} is out of range for {parts} parts",
            t.part
        )));
    }
    let name = step.name();
    let started = Instant::now();
    let client = connect(t).await?;
    let stop = ctl.stop.as_ref();
    tracing::info!(
        step = name,
        warehouses = o.warehouses,
        part = t.part,
        parts,
        "tpcc step"
    );
    let notes = match step {
        TpccStep::Schema => {
            schema::create(&client).await?;
            let n = load::load_items(&client, stop).await?;
            vec![
                format!("created {} tables", schema::TABLES.len()),
                format!("item: {n} rows"),
            ]
        }
        TpccStep::Load => {
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
        TpccStep::Finish => schema::finish(&client, stop).await?,
        TpccStep::Check => check::check(&client, stop).await?,
    };
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(step = name, seconds, "tpcc step done");
    Ok(StepOutcome {
        seconds,
        metrics: vec![Metric::seconds(format!("tpcc.{name}_s"), seconds)],
        notes,
    })
}
