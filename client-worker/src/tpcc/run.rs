//! A run's share on this worker: connect every terminal, report "ready", wait for the go,
//! warm up, measure, and fold the terminals' measurements into a `LoadResult`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use tokio::sync::oneshot;

use super::driver::{KINDS, NAMES, Pace, Shared, TermStats, Timeline, terminal};
use super::params::{DISTRICTS, TpccOptions};
use super::rand::{NuConstants, Rng};
use super::txn::Terminal;
use crate::conn::Target;
use crate::cpu::CpuTimes;
use crate::engine::control::LoadControl;
use crate::engine::live::report_live_from;
use crate::engine::stats::serialize_histogram;
use crate::engine::window::{self, WindowFacts, WindowParams};
use crate::error::WorkerError;
use blocklab_measure::{LoadResult, Metric, TxnType};

/// The seed of terminal `k`'s generator, from the run's seed.
fn terminal_seed(seed: u64, k: u32) -> u64 {
    let mut r = Rng::seed(seed ^ 0x7e41_0000_0000_0000);
    r.next_u64()
        .wrapping_add(u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

async fn connect_terminal(
    target: &Target,
    k: u32,
    warehouses: i32,
    seed: u64,
    c: NuConstants,
) -> Result<(Terminal, Duration), WorkerError> {
    let t0 = Instant::now();
    let conn = crate::engine::pgwire::startup::connect(target)
        .await
        .map_err(|e| WorkerError::Connect {
            target: target.display.clone(),
            reason: e.to_string(),
        })?;
    let home = (
        (k % warehouses as u32) as i32 + 1,
        ((k / warehouses as u32) % DISTRICTS as u32) as i32 + 1,
        warehouses,
    );
    let term = Terminal::prepare(conn, Rng::seed(terminal_seed(seed, k)), home, c)
        .await
        .map_err(|e| WorkerError::Sql {
            context: format!(
                "tpcc terminal {k}: preparing the statements (load the tpcc data first)"
            ),
            reason: e.to_string(),
        })?;
    Ok((term, t0.elapsed()))
}

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
    tracing::info!(target = %target.display, terminals = t.clients, warehouses = w, seed,
        keying_thinking = o.keying_thinking, time_scale = o.time_scale, "starting tpcc run");

    let begin = Instant::now();
    let connects = (0..t.clients).map(|i| {
        let k = t.client_id_offset.wrapping_add(i);
        connect_terminal(&target, k, w, seed, c)
    });
    let mut terms = Vec::with_capacity(t.clients as usize);
    let mut conn_total = Duration::ZERO;
    for r in futures::future::join_all(connects).await {
        let (term, took) = r?;
        conn_total += took;
        terms.push(term);
    }
    let connection_elapsed = begin.elapsed();
    progress.stage(blocklab_spec::Stage::Ready, "").await;
    tracing::info!(terminals = t.clients, "all tpcc terminals connected");
    if let Some(go) = go {
        if ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(WorkerError::Run("cancelled before the go".into()));
        }
        tokio::select! {
            r = go => if r.is_err() { return Err(WorkerError::Run("the go signal was dropped".into())) },
            _ = ctl.stopped.notified() => return Err(WorkerError::Run("cancelled before the go".into())),
        }
    }

    let start = Instant::now();
    let duration = t.duration;
    let tl = Timeline {
        window_start: start + t.warmup,
        end: start + t.warmup + duration,
        window_seconds: duration.as_secs_f64().ceil().max(1.0) as usize,
    };
    let shared = Arc::new(Shared::new(ctl.stop.clone(), tl.window_seconds));
    let pace = Pace {
        keying_thinking: o.keying_thinking,
        time_scale: o.time_scale,
    };
    let handles: Vec<_> = terms
        .into_iter()
        .enumerate()
        .map(|(i, term)| {
            let id = t.client_id_offset.wrapping_add(i as u32);
            tokio::spawn(terminal(id, term, tl, shared.clone(), pace))
        })
        .collect();
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
        move || shared.live.load(std::sync::atomic::Ordering::Relaxed)
    };
    let live = tokio::spawn(report_live_from(
        completed,
        progress.clone(),
        tl.window_start,
    ));

    let mut total = TermStats::new();
    let mut first_err = None;
    for h in handles {
        match h.await {
            Ok(Ok(s)) => total.merge(&s),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(WorkerError::Run(format!("a tpcc terminal panicked: {e}")));
            }
        }
    }
    live.abort();
    total.all.seconds = shared.series();
    let cpu = CpuTimes::now().since(cpu_before);
    if let Some(e) = first_err {
        return Err(e);
    }
    if ctl.stop.load(std::sync::atomic::Ordering::Relaxed) {
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
