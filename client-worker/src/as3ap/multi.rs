//! The multi-user mixes: every user repeatedly runs OSDB's IR select (`mu_ir_select`) or
//! OLTP update (`mu_oltp_update`) on `updates` by a random existing key, and the run
//! reports queries and tuples per second. The users are split over load threads, each
//! running its share as tasks of its own executor ([`super::users`]); the run itself
//! (stages, go, live throughput) stays on tokio. The worker with the first client ids also
//! runs OSDB's cross-section tests ([`super::cross`]) on one more session, on tokio: from
//! the start of the measured window, once, then its checks after the users have stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use blocklab_daemon::fleet::ProgressSink;
use tokio::sync::oneshot;

use crate::conn::Target;
use crate::cpu::CpuTimes;
use crate::engine::control::LoadControl;
use crate::engine::spread::{self, Halt, Kind};
use crate::engine::stats::{ClientStats, SharedSeries};
use crate::engine::window::{WindowFacts, WindowParams};
use crate::error::WorkerError;
use blocklab_measure::LoadResult;
use blocklab_script::prng::PgPrng;

use super::cross::{CrossOutcome, Session};
use super::mix::Mix;
use super::result::result;
use super::users::{Setup, Span, run_thread};
use crate::engine::live::report_live;

static KIND: Kind = Kind {
    name: "as3ap",
    panicked: "an as3ap load thread panicked",
};

/// Runs `mix` with `t.clients` users against a database of `rows` rows per table.
pub async fn run_mix(
    t: &WindowParams,
    rows: u64,
    mix: Mix,
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
            "duration_ms must be positive for an as3ap mix".into(),
        ));
    }
    let conninfo = t
        .conninfo
        .as_deref()
        .ok_or_else(|| WorkerError::InvalidArgument("conninfo is missing".into()))?;
    let target = Target::parse(conninfo)?;
    let random_seed = crate::engine::control::effective_seed(t.random_seed);
    // As the pgbench engine: one draw of the base sequence seeds each user, and users of
    // other workers take the draws before ours.
    let mut base = PgPrng::seed(random_seed);
    for _ in 0..t.client_id_offset {
        base.next_u64();
    }
    let seeds: Vec<u64> = (0..t.clients).map(|_| base.next_u64()).collect();
    let thread_count = spread::thread_count(t.threads, t.clients);
    let parts: Vec<Vec<u64>> = spread::split(t.clients, thread_count)
        .into_iter()
        .map(|r| seeds[r.start as usize..r.end as usize].to_vec())
        .collect();
    let duration = t.duration;
    let seconds = duration.as_secs_f64().ceil().max(1.0) as usize;
    let setup = Arc::new(Setup {
        target,
        mix,
        proto: t.protocol,
        rows,
        stop: ctl.stop.clone(),
        halt: AtomicBool::new(false),
        live: AtomicU64::new(0),
        series: SharedSeries::new(seconds),
    });
    let halt: Halt = {
        let s = setup.clone();
        Arc::new(move || s.halt.store(true, Ordering::Relaxed))
    };
    let begin = Instant::now();
    let mut threads = spread::spawn(&KIND, parts, halt, {
        let s = setup.clone();
        move |seeds, hs| run_thread(&s, seeds, hs)
    })?;
    let conn_total = match threads.ready().await {
        Ok(total) => total,
        Err(e) => {
            threads.abort().await;
            return Err(e);
        }
    };
    let connection_elapsed = begin.elapsed();
    let cross = if t.client_id_offset == 0 {
        match Session::open(&setup.target, rows).await {
            Ok(x) => Some(x),
            Err(e) => {
                threads.abort().await;
                return Err(e);
            }
        }
    } else {
        None
    };
    tracing::info!(
        mix = mix.class(),
        clients = t.clients,
        threads = thread_count,
        rows,
        "as3ap users connected"
    );
    if let Some(go) = go {
        progress.stage(blocklab_spec::Stage::Ready, "").await;
        let waited = tokio::select! {
            r = go => r.map_err(|_| WorkerError::Run("the go signal was dropped".into())),
            _ = ctl.stopped.notified() => Err(WorkerError::Run("cancelled before the go".into())),
        };
        if let Err(e) = waited {
            threads.abort().await;
            return Err(e);
        }
    }
    let start = Instant::now() + t.warmup;
    let w = Span {
        start,
        end: start + duration,
    };
    threads.start(w);
    if !t.warmup.is_zero() {
        progress
            .stage(
                blocklab_spec::Stage::WarmingUp,
                &format!("{} s warm-up", t.warmup.as_secs_f64()),
            )
            .await;
        tokio::select! {
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(start)) => {}
            _ = ctl.stopped.notified() => {}
        }
    }
    let cpu_before = CpuTimes::now();
    progress
        .stage(
            blocklab_spec::Stage::Measuring,
            &format!("{} s measured", duration.as_secs_f64()),
        )
        .await;
    let completed = {
        let s = setup.clone();
        move || s.live.load(Ordering::Relaxed)
    };
    let reporter = tokio::spawn(report_live(completed, progress.clone()));
    let cross = cross.map(|x| {
        let stop = ctl.stop.clone();
        tokio::spawn(async move {
            let tests = x.run(&stop).await;
            (x, tests)
        })
    });
    let ended = threads.finish().await;
    reporter.abort();
    let mut total = ClientStats::new(seconds);
    let mut tuples = 0u64;
    let mut last_finish = w.start;
    let mut first_err = None;
    for o in ended? {
        total.merge(&o.stats);
        tuples += o.tuples;
        last_finish = last_finish.max(o.finished.unwrap_or(w.start));
        if let Some(e) = o.error {
            first_err.get_or_insert(e);
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    total.seconds = setup.series.snapshot();
    let cpu = CpuTimes::now().since(cpu_before);
    let cross = match cross {
        Some(h) => {
            let (x, tests) = h
                .await
                .map_err(|_| WorkerError::Run("the as3ap cross section panicked".into()))?;
            let tests = tests?;
            if ctl.stop.load(Ordering::Relaxed) {
                None
            } else {
                let checks = x.check().await?;
                Some(CrossOutcome { tests, checks })
            }
        }
        None => None,
    };
    let measured_s = last_finish.saturating_duration_since(w.start).as_secs_f64();
    if total.transactions == 0 && !ctl.stop.load(Ordering::Relaxed) {
        return Err(WorkerError::Run(format!(
            "no as3ap query succeeded ({} failed): {}",
            total.failures,
            total.first_error.as_deref().unwrap_or("no error recorded")
        )));
    }
    let tup_per_s = if measured_s > 0.0 {
        tuples as f64 / measured_s
    } else {
        0.0
    };
    tracing::info!(
        mix = mix.class(),
        queries = total.transactions,
        failures = total.failures,
        tuples,
        tup_per_s,
        "as3ap mix finished"
    );
    let facts = WindowFacts {
        measured_s,
        connection_elapsed,
        connection_total: conn_total,
        cpu,
        clients: t.clients,
        random_seed,
    };
    if let Some(x) = &cross {
        tracing::info!(
            mix = mix.class(),
            cross_section_s = x.total_s(),
            "as3ap cross section done"
        );
    }
    Ok(result(
        &total,
        tuples,
        mix,
        &facts,
        tup_per_s,
        cross.as_ref(),
    ))
}
