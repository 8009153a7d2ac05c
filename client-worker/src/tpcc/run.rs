//! A run's share on this worker: split the terminals over load threads
//! ([`crate::engine::spread`], [`super::thread`]), each connecting its terminals and then
//! running them on its own executor; report "ready" once all are connected, wait for the go,
//! start the threads, warm up, measure, and fold the threads' measurements into a
//! `LoadResult`. The run itself (stages, go, live throughput) stays on tokio.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use tokio::sync::oneshot;

use super::driver::{KINDS, NAMES, Pace, Shared, TermStats, Timeline};
use super::params::TpccOptions;
use super::rand::{NuConstants, Rng};
use super::thread::{Setup, run_thread};
use crate::conn::Target;
use crate::cpu::CpuTimes;
use crate::engine::control::LoadControl;
use crate::engine::live::report_live_from;
use crate::engine::spread::{self, Halt, Kind};
use crate::engine::stats::serialize_histogram;
use crate::engine::window::{self, WindowFacts, WindowParams};
use crate::error::WorkerError;
use blocklab_measure::{LoadResult, Metric, TxnType};

static KIND: Kind = Kind {
    name: "tpcc",
    panicked: "a tpcc load thread panicked",
};

/// Runs this worker's share of the measured window: connect, report "ready", wait for `go`
/// (when given), warm up, measure.
pub async fn run(
    t: &WindowParams,
    o: &TpccOptions,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<LoadResult, WorkerError> {
    if t.clients == 0 {
        return Err(WorkerError::InvalidArgument(
            "clients must be at least 1".into(),
        ));
    }
    if t.duration.is_zero() {
        return Err(WorkerError::InvalidArgument(
            "duration_ms must be positive for a tpcc run".into(),
        ));
    }
    let conninfo = t
        .conninfo
        .as_deref()
        .ok_or_else(|| WorkerError::InvalidArgument("conninfo is missing".into()))?;
    let target = Target::parse(conninfo)?;
    let seed = crate::engine::control::effective_seed(t.random_seed);
    let c = NuConstants::for_run(&mut Rng::seed(seed));
    let w = i32::try_from(o.warehouses)
        .map_err(|_| WorkerError::InvalidArgument("warehouses is too large".into()))?;
    let thread_count = spread::thread_count(t.threads, t.clients);
    tracing::info!(target = %target.display, terminals = t.clients, threads = thread_count, warehouses = w,
        seed, keying_thinking = o.keying_thinking, time_scale = o.time_scale, "starting tpcc run");

    let duration = t.duration;
    let window_seconds = duration.as_secs_f64().ceil().max(1.0) as usize;
    let shared = Arc::new(Shared::new(ctl.stop.clone(), window_seconds));
    let setup = Arc::new(Setup {
        target,
        warehouses: w,
        seed,
        c,
        client_id_offset: t.client_id_offset,
        shared: shared.clone(),
        pace: Pace {
            keying_thinking: o.keying_thinking,
            time_scale: o.time_scale,
        },
    });
    let halt: Halt = {
        let shared = shared.clone();
        Arc::new(move || shared.abort.store(true, Ordering::Relaxed))
    };
    let begin = Instant::now();
    let mut threads = spread::spawn(
        &KIND,
        spread::split(t.clients, thread_count),
        halt,
        move |part, hs| run_thread(&setup, part, hs),
    )?;
    let conn_total = match threads.ready().await {
        Ok(total) => total,
        Err(e) => {
            threads.abort().await;
            return Err(e);
        }
    };
    let connection_elapsed = begin.elapsed();
    progress.stage(blocklab_spec::Stage::Ready, "").await;
    tracing::info!(terminals = t.clients, "all tpcc terminals connected");
    if let Some(go) = go {
        let cancelled = || WorkerError::Run("cancelled before the go".into());
        let waited = if ctl.stop.load(Ordering::Relaxed) {
            Err(cancelled())
        } else {
            tokio::select! {
                r = go => r.map_err(|_| WorkerError::Run("the go signal was dropped".into())),
                _ = ctl.stopped.notified() => Err(cancelled()),
            }
        };
        if let Err(e) = waited {
            threads.abort().await;
            return Err(e);
        }
    }

    let start = Instant::now();
    let tl = Timeline {
        window_start: start + t.warmup,
        end: start + t.warmup + duration,
    };
    threads.start(tl);
    if !t.warmup.is_zero() {
        let msg = format!("{} s warm-up", t.warmup.as_secs_f64());
        progress.stage(blocklab_spec::Stage::WarmingUp, &msg).await;
        tokio::time::sleep_until(tokio::time::Instant::from_std(tl.window_start)).await;
    }
    let cpu_before = CpuTimes::now();
    let msg = format!("{} s measured", duration.as_secs_f64());
    progress.stage(blocklab_spec::Stage::Measuring, &msg).await;
    let completed = {
        let shared = shared.clone();
        move || shared.live.load(Ordering::Relaxed)
    };
    let live = tokio::spawn(report_live_from(
        completed,
        progress.clone(),
        tl.window_start,
    ));

    let ended = threads.finish().await;
    live.abort();
    let mut total = TermStats::new();
    let mut first_err = None;
    for o in ended? {
        total.merge(&o.stats);
        if let Some(e) = o.error {
            first_err.get_or_insert(e);
        }
    }
    total.all.seconds = shared.series();
    let cpu = CpuTimes::now().since(cpu_before);
    if let Some(e) = first_err {
        return Err(e);
    }
    if ctl.stop.load(Ordering::Relaxed) {
        return Err(WorkerError::Run("cancelled".into()));
    }
    let measured = Instant::now()
        .min(tl.end)
        .saturating_duration_since(tl.window_start);
    let r = build_result(
        t,
        &total,
        measured.as_secs_f64(),
        (connection_elapsed, conn_total),
        cpu,
        seed,
    );
    tracing::info!(
        transactions = r.transactions,
        failures = r.failures,
        notpm = r.metrics.first().map_or(0.0, |m| m.value),
        "tpcc run finished"
    );
    if r.transactions == 0 {
        return Err(WorkerError::Run(format!(
            "no tpcc transaction completed ({} failed): {}",
            r.failures,
            total.first_error.as_deref().unwrap_or("no error recorded")
        )));
    }
    Ok(r)
}

fn build_result(
    t: &WindowParams,
    total: &TermStats,
    measured_s: f64,
    (conn_elapsed, conn_total): (Duration, Duration),
    cpu: CpuTimes,
    seed: u64,
) -> LoadResult {
    let all = &total.all;
    let txn_types: Vec<TxnType> = (0..KINDS)
        .map(|k| TxnType {
            name: NAMES[k].into(),
            count: total.kinds[k].transactions,
            rollbacks: total.rollbacks[k],
            failures: total.kinds[k].failures,
            latency_histogram: serialize_histogram(&total.kinds[k].histogram),
            rows: 0,
        })
        .collect();
    let notpm = if measured_s > 0.0 {
        total.kinds[0].transactions as f64 * 60.0 / measured_s
    } else {
        0.0
    };
    let facts = WindowFacts {
        measured_s,
        connection_elapsed: conn_elapsed,
        connection_total: conn_total,
        cpu,
        clients: t.clients,
        random_seed: seed,
    };
    LoadResult {
        metrics: vec![Metric {
            name: "notpm".into(),
            value: notpm,
            unit: "NOTPM".into(),
            higher_is_better: true,
        }],
        txn_types,
        ..window::summary(all, &facts)
    }
}
