//! An AS3AP-like suite as OSDB runs it: the five tables and their generator, the timed
//! single-user query list, and the multi-user mixes reporting tuples per second.
//!
//! # Data (R = `workload.as3ap.rows` rows in each of uniques, hundred, tenpct, updates)
//!
//! Follows AS3APgen (Balian, Krabbe, Smith, 1992), the generator behind OSDB's data. A
//! "permuted" column takes rank r = P(i) of the row number i from a keyed pseudo-random
//! bijection of [0, R), so each value appears once in random physical order; data depend
//! only on R. Integer-valued columns as in AS3APgen (floats hold integers).
//!
//! | column | uniques, updates | hundred | tenpct |
//! |---|---|---|---|
//! | key | uniques: sparse 1000 + r*(10^9/R); updates: dense 0, 2..R (no 1) | dense 0, 2..R | sparse, as uniques |
//! | int | = key | sparse r*(10^9/R) (one row is 0) | = key |
//! | signed | unique, r*(10^9/R) - 5*10^8 | 100 + r mod 100 (100 values) | unique, as uniques |
//! | float | Zipf-like: 10 values, frequency of the j-th ~ 1/j^2 | 100 values, with signed | Zipf-like |
//! | double | normal(0, 2.417*10^8) | 100 values, with signed | R/10 values |
//! | decim | unique, r*(2*10^9/R) - 10^9 | = double | = double |
//! | date | uniform day, 1900-01-01 + [0, 36860) | same | same |
//! | code | unique char(10); exactly one 'BENCHMARKS' | same | same |
//! | name | unique char(20); one 'THE+ASAP+BENCHMARKS+' | 100 values with signed, one of them THE+ASAP... | 10 values (10% each), one THE+ASAP... |
//! | address | 2..80 chars, length 2 + Poisson(18), ~80% distinct, one 'SILICON VALLEY' | 100 values with signed, one SILICON VALLEY | R/10 values, 10 rows each |
//!
//! tiny holds one row (col_key 0). Hence: sel_1 (key 1000 or code BENCHMARKS) finds one
//! row; sel_100 (key or int <= 100) 100 rows; sel_10pct (uniques key <= 10^8, or tenpct
//! name THE+ASAP+BENCHMARKS+) about 10%; sel_variable_select_high 25% of tenpct and _low
//! none; join_2 R/100 rows; agg_func 100 groups; table_scan (int = 1) none. Deviations
//! from AS3APgen: sparse keys are offset by 1000 instead of replacing 0 by 1000 (which
//! collides at R >= 10^6); hundred's int keeps 0 so the integrity test touches a row.
//!
//! # Steps and mixes
//!
//! `load` creates, COPYs and indexes (OSDB's order; the key btrees unique and clustered,
//! `_h` indexes hash); `single-user` runs OSDB's list ([`list::single_user_list`]) and
//! restores the tables; `run` drives the `mixed-ir` or `mixed-oltp` mix ([`multi`]), its
//! users split over load threads, each running its share on its own executor (`users`).

mod cross;
mod generate;
mod list;
mod mix;
mod multi;
mod queries;
mod result;
mod schema;
mod users;

use std::time::Instant;

use blocklab_daemon::fleet::ProgressSink;
use blocklab_script::Protocol;
use tokio::sync::oneshot;
use tokio_postgres::Client;

use crate::conn::Target;
use crate::engine::control::LoadControl;
use crate::engine::window::{StepOutcome, StepParams, WindowParams};
use crate::error::WorkerError;
use blocklab_measure::{LoadResult, Metric};

pub use generate::{ADDRESS_1, CODE_1, NAME_1};
pub use mix::Mix;

pub const MIN_ROWS: u64 = 1000;
pub const MAX_ROWS: u64 = 100_000_000;

/// The row count of each of uniques, hundred, tenpct and updates, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rows(u64);

impl Rows {
    pub fn new(rows: u64) -> Result<Rows, WorkerError> {
        if !(MIN_ROWS..=MAX_ROWS).contains(&rows) {
            return Err(WorkerError::InvalidArgument(format!(
                "workload.as3ap.rows must be between {MIN_ROWS} and {MAX_ROWS}, got {rows}"
            )));
        }
        Ok(Rows(rows))
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

/// A step outside the measured window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum As3apStep {
    /// Create and load the tables, build the indexes.
    Load,
    /// The timed single-user query list.
    SingleUser,
}

impl As3apStep {
    pub fn name(self) -> &'static str {
        match self {
            As3apStep::Load => "load",
            As3apStep::SingleUser => "single-user",
        }
    }
}

impl TryFrom<blocklab_spec::WorkloadStep> for As3apStep {
    type Error = WorkerError;

    fn try_from(s: blocklab_spec::WorkloadStep) -> Result<As3apStep, WorkerError> {
        use blocklab_spec::WorkloadStep;
        match s {
            WorkloadStep::Load => Ok(As3apStep::Load),
            WorkloadStep::SingleUser => Ok(As3apStep::SingleUser),
            other => Err(WorkerError::InvalidArgument(format!(
                "workload_step.step {other} is not an as3ap step; allowed: load, single-user"
            ))),
        }
    }
}

fn secs(name: &str, value: f64) -> Metric {
    Metric::seconds(name, value)
}

async fn open(conn: Option<&str>) -> Result<(Client, tokio::task::JoinHandle<()>), WorkerError> {
    let text = conn.ok_or_else(|| WorkerError::InvalidArgument("conninfo is missing".into()))?;
    Target::parse(text)?.connect().await
}

/// Runs one step outside the measured window (on part 0 only).
pub async fn step(
    step: As3apStep,
    rows: Rows,
    t: &StepParams,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<StepOutcome, WorkerError> {
    let rows = rows.get();
    let parts = t.parts.max(1);
    if t.part != 0 {
        return Ok(StepOutcome {
            seconds: 0.0,
            metrics: Vec::new(),
            notes: vec![format!(
                "part {} of {parts}: the as3ap {} step runs on part 0 only",
                t.part,
                step.name()
            )],
        });
    }
    let started = Instant::now();
    let (client, conn_task) = open(t.conninfo.as_deref()).await?;
    // A cancel interrupts the statement in progress (a long index build or query).
    let token = client.cancel_token();
    let stopped = ctl.stopped.clone();
    let canceller = tokio::spawn(async move {
        stopped.notified().await;
        let _ = token.cancel_query(tokio_postgres::NoTls).await;
    });
    let res = if step == As3apStep::Load {
        load(&client, rows, progress, ctl).await
    } else {
        single_user(&client, rows, progress, ctl).await
    };
    canceller.abort();
    drop(client);
    let _ = conn_task.await;
    let (metrics, notes) = res?;
    Ok(StepOutcome {
        seconds: started.elapsed().as_secs_f64(),
        metrics,
        notes,
    })
}

type Measured = (Vec<Metric>, Vec<String>);

async fn load(
    client: &Client,
    rows: u64,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<Measured, WorkerError> {
    tracing::info!(rows, "as3ap load starting");
    let started = Instant::now();
    progress
        .stage(
            blocklab_spec::Stage::LoadingData,
            &format!("as3ap: copying 4 x {rows} rows"),
        )
        .await;
    schema::create_tables(client).await?;
    schema::load_tables(client, rows, ctl).await?;
    let load_s = started.elapsed().as_secs_f64();
    progress
        .stage(blocklab_spec::Stage::LoadingData, "as3ap: building indexes")
        .await;
    let started = Instant::now();
    let mut notes = schema::build_indexes(client, ctl).await?;
    let index_s = started.elapsed().as_secs_f64();
    let counts = schema::row_counts(client).await?;
    let mut head: Vec<String> = counts
        .iter()
        .map(|(t, n)| format!("{t}: {n} rows"))
        .collect();
    head.push(format!(
        "load {load_s:.3} s, indexes and vacuum analyze {index_s:.3} s"
    ));
    head.append(&mut notes);
    tracing::info!(rows, load_s, index_s, "as3ap load done");
    Ok((
        vec![secs("as3ap.load_s", load_s), secs("as3ap.index_s", index_s)],
        head,
    ))
}

async fn single_user(
    client: &Client,
    rows: u64,
    progress: &ProgressSink,
    ctl: &LoadControl,
) -> Result<Measured, WorkerError> {
    let list = list::single_user_list(rows);
    progress
        .stage(
            blocklab_spec::Stage::LoadingData,
            &format!("as3ap: single-user test, {} queries", list.len()),
        )
        .await;
    queries::prepare(client).await?;
    let before = schema::row_counts(client).await?;
    let outcomes = queries::run_list(client, &list, ctl).await?;
    queries::restore(client).await?;
    let after = schema::row_counts(client).await?;
    let mut metrics = Vec::with_capacity(outcomes.len() + 1);
    let mut notes = Vec::with_capacity(outcomes.len() + 2);
    let mut total = 0.0;
    for (name, o) in &outcomes {
        total += o.seconds;
        metrics.push(secs(&format!("q.{name}"), o.seconds));
        let plural = if o.rows == 1 { "" } else { "s" };
        let mut line = format!(
            "q.{name}: {:.6} s, {} row{plural} {}",
            o.seconds, o.rows, o.what
        );
        if let Some(r) = &o.refused {
            line.push_str(&format!(", {r}"));
        }
        notes.push(line);
    }
    metrics.push(secs("as3ap.single_user_s", total));
    notes.push(format!(
        "single-user total {total:.3} s; restored: updates_double_bt, updates_decim_bt, no reportview or saveupdates, vacuum analyze updates, hundred"
    ));
    if before != after {
        notes.push(format!(
            "row counts changed: before {before:?}, after {after:?}"
        ));
    }
    tracing::info!(
        queries = outcomes.len(),
        total,
        "as3ap single-user test done"
    );
    Ok((metrics, notes))
}

/// Runs this worker's share of the measured window: connect, report "ready", wait for `go`
/// (when given), warm up, measure.
pub async fn run(
    t: &WindowParams,
    rows: Rows,
    mix: Mix,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<LoadResult, WorkerError> {
    multi::run_mix(t, rows.get(), mix, progress, ctl, go).await
}

/// The protocol of an as3ap mix (empty: simple).
pub fn protocol(s: &str) -> Result<Protocol, WorkerError> {
    match s {
        "" | "simple" => Ok(Protocol::Simple),
        "extended" => Ok(Protocol::Extended),
        "prepared" => Ok(Protocol::Prepared),
        other => Err(WorkerError::InvalidArgument(format!(
            "protocol {other:?} is unknown; allowed: simple, extended, prepared"
        ))),
    }
}
