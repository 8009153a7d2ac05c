//! Running a load: clients spread over OS threads (one current-thread runtime each), all
//! connected before a common start, an optional warm-up, then the measured window.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use blocklab_proto::fleet::ProgressSink;
use tokio::sync::{mpsc, oneshot, watch};

use crate::client::Plan;
use crate::conn::Target;
use crate::cpu::CpuTimes;
use crate::error::{WorkerError, describe};
use crate::report::{LoadOptions, LoadReport, Timings};
use crate::stats::ClientStats;
use crate::worker_thread::{ThreadOutcome, run_thread};

/// When clients start and stop; sent to every thread once all are connected.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeline {
    pub window_start: Instant,
    pub end: Instant,
    pub window_seconds: usize,
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Go {
    Wait,
    Start(Timeline),
    Abort,
}

/// Runs a load as `opts` describe, with no progress reports.
pub async fn run_load(opts: &LoadOptions) -> Result<LoadReport, WorkerError> {
    run_load_observed(
        opts,
        &ProgressSink::detached(),
        Arc::new(AtomicBool::new(false)),
    )
    .await
}

/// Runs a load, reporting stages to `progress`; setting `stop` ends it early.
pub async fn run_load_observed(
    opts: &LoadOptions,
    progress: &ProgressSink,
    stop: Arc<AtomicBool>,
) -> Result<LoadReport, WorkerError> {
    opts.validate()?;
    let target = Target::parse(&opts.conninfo)?;
    let scale = if opts.scale == 0 {
        detect_scale(&target).await?
    } else {
        opts.scale
    };
    let threads = opts.threads.min(opts.clients).max(1);
    let plan = Plan::new(
        target,
        opts.builtin.script(),
        opts.protocol,
        i64::from(scale),
    );
    tracing::info!(
        target = %plan.target.display, builtin = opts.builtin.name(), protocol = opts.protocol.name(),
        clients = opts.clients, threads, scale, "starting load"
    );

    let begin = Instant::now();
    let (go_tx, go_rx) = watch::channel(Go::Wait);
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel();
    let mut outcomes = Vec::new();
    for t in 0..threads {
        // pgbench's split: the first (clients % threads) threads get one client more.
        let n = opts.clients / threads + u32::from(t < opts.clients % threads);
        let (done_tx, done_rx) = oneshot::channel();
        let (plan, go_rx, ready_tx, stop) =
            (plan.clone(), go_rx.clone(), ready_tx.clone(), stop.clone());
        std::thread::Builder::new()
            .name(format!("load-{t}"))
            .spawn(move || {
                let outcome = run_thread(&plan, n as usize, go_rx, ready_tx, stop);
                let _ = done_tx.send(outcome);
            })
            .map_err(|e| WorkerError::Run(format!("cannot start load thread: {e}")))?;
        outcomes.push(done_rx);
    }
    drop(ready_tx);

    let mut conn_total = Duration::ZERO;
    let mut first_err = None;
    for _ in 0..threads {
        match ready_rx.recv().await {
            Some(Ok(times)) => conn_total += times.iter().sum::<Duration>(),
            Some(Err(e)) => {
                first_err.get_or_insert(e);
            }
            None => {
                first_err.get_or_insert(WorkerError::Run("a load thread exited early".into()));
            }
        }
    }
    if let Some(e) = first_err {
        let _ = go_tx.send(Go::Abort);
        for o in outcomes {
            let _ = o.await;
        }
        return Err(e);
    }
    let connection_elapsed = begin.elapsed();
    let start = Instant::now();
    let window_start = start + opts.warmup;
    let timeline = Timeline {
        window_start,
        end: window_start + opts.duration,
        window_seconds: opts.duration.as_secs_f64().ceil().max(1.0) as usize,
    };
    let _ = go_tx.send(Go::Start(timeline));
    tracing::info!(
        connection_ms = connection_elapsed.as_secs_f64() * 1e3,
        "all clients connected"
    );
    if !opts.warmup.is_zero() {
        progress
            .stage(
                "warming-up",
                &format!("{} s warm-up", opts.warmup.as_secs_f64()),
            )
            .await;
        tokio::time::sleep_until(tokio::time::Instant::from_std(window_start)).await;
    }
    let cpu_before = CpuTimes::now();
    progress
        .stage(
            "measuring",
            &format!("{} s measured", opts.duration.as_secs_f64()),
        )
        .await;

    let mut total = ClientStats::new(timeline.window_seconds);
    let mut last_finish = window_start;
    for o in outcomes {
        let ThreadOutcome { stats, finished } = o
            .await
            .map_err(|_| WorkerError::Run("a load thread panicked".into()))?;
        total.merge(&stats);
        last_finish = last_finish.max(finished);
    }
    let cpu = CpuTimes::now().since(cpu_before);
    let timings = Timings {
        scale,
        threads,
        measured: last_finish.saturating_duration_since(window_start),
        connection_elapsed,
        connection_total: conn_total,
        cpu,
    };
    let report = LoadReport::build(opts, &timings, &total);
    tracing::info!(
        transactions = report.transactions,
        failures = report.failures,
        tps = report.tps_excluding_connections,
        latency_avg_ms = report.latency_avg_ms,
        "load finished"
    );
    Ok(report)
}

/// The scale as pgbench finds it: the number of rows in pgbench_branches.
pub async fn detect_scale(target: &Target) -> Result<u32, WorkerError> {
    let (client, task) = target.connect().await?;
    let row = client
        .query_one("select count(*) from pgbench_branches", &[])
        .await
        .map_err(|e| WorkerError::Sql {
            context: "cannot read the scale from pgbench_branches (initialize the data first)"
                .into(),
            reason: describe(&e),
        })?;
    drop(client);
    let _ = task.await;
    let n: i64 = row.get(0);
    match u32::try_from(n) {
        Ok(s) if s > 0 => Ok(s),
        _ => Err(WorkerError::Run(format!(
            "invalid count(*) from pgbench_branches: {n}"
        ))),
    }
}
