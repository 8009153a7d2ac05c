//! The multi-user mixes: every user repeatedly runs OSDB's IR select (`mu_ir_select`) or
//! OLTP update (`mu_oltp_update`) on `updates` by a random existing key, and the run
//! reports queries and tuples per second. The worker with the first client ids also runs
//! OSDB's cross-section tests ([`super::cross`]) on one more session: from the start of
//! the measured window, once, then its checks after the users have stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use tokio::sync::oneshot;

use crate::conn::Target;
use crate::cpu::CpuTimes;
use crate::engine::control::LoadControl;
use crate::engine::pgwire::query::{self, Rows};
use crate::engine::pgwire::request::Template;
use crate::engine::pgwire::{Conn, SqlError, startup};
use crate::engine::stats::{ClientStats, SharedSeries};
use crate::engine::window::{WindowFacts, WindowParams};
use crate::error::WorkerError;
use blocklab_measure::LoadResult;
use blocklab_script::Protocol;
use blocklab_script::prng::PgPrng;

use super::cross::{CrossOutcome, Session};
use super::mix::Mix;
use super::result::result;
use crate::engine::live::report_live;

/// One user's connection (the load engine's own, `engine::pgwire`), the query's frames
/// under the extended and prepared protocols, and its random stream.
struct User {
    conn: Conn,
    template: Option<Template>,
    rows: Rows,
    scratch: String,
    rng: PgPrng,
}

/// The measured window, and its one per-second series for all users.
struct Window {
    start: Instant,
    end: Instant,
    seconds: usize,
    series: SharedSeries,
}

struct UserOutcome {
    stats: ClientStats,
    tuples: u64,
    finished: Instant,
}

/// A random existing key of `updates`: 0, 2, 3, ..., rows (OSDB: "there IS no key 1").
fn random_key(rng: &mut PgPrng, rows: u64) -> i32 {
    let k = rng.u64_range(0, rows - 1);
    let k = if k == 1 { rows } else { k };
    i32::try_from(k).unwrap_or(i32::MAX)
}

async fn one(mix: Mix, u: &mut User, rows: u64) -> Result<u64, SqlError> {
    let key = random_key(&mut u.rng, rows);
    match &u.template {
        None => {
            let sql = format!("{}{key}", mix.sql());
            query::simple_rows(&mut u.conn, &sql, &mut u.rows).await?;
        }
        Some(t) => query::query(&mut u.conn, t, &[&key], &mut u.scratch, &mut u.rows).await?,
    }
    Ok(match mix {
        Mix::Ir => u.rows.len() as u64,
        Mix::Oltp => u.rows.affected(),
    })
}

async fn drive(
    mix: Mix,
    mut u: User,
    rows: u64,
    w: Arc<Window>,
    stop: Arc<AtomicBool>,
    live: Arc<AtomicU64>,
) -> UserOutcome {
    let mut stats = ClientStats::new(1);
    let mut tuples = 0;
    let mut finished = w.start;
    while !stop.load(Ordering::Relaxed) && Instant::now() < w.end {
        let t0 = Instant::now();
        let res = one(mix, &mut u, rows).await;
        let t1 = Instant::now();
        let counted = t0 >= w.start;
        let second = t1.saturating_duration_since(w.start).as_secs() as usize;
        match res {
            Ok(n) if counted => {
                stats.record(0, t1 - t0);
                w.series.record(second, Some(t1 - t0));
                tuples += n;
                live.fetch_add(1, Ordering::Relaxed);
                finished = t1;
            }
            Ok(_) => {}
            Err(e) => {
                if counted {
                    stats.record_failure(0, || e.to_string());
                    w.series.record(second, None);
                    finished = t1;
                }
                if u.conn.is_broken() {
                    tracing::warn!(error = %e, "as3ap user lost its connection");
                    break;
                }
            }
        }
    }
    u.conn.close().await;
    UserOutcome {
        stats,
        tuples,
        finished,
    }
}

async fn connect(
    target: &Target,
    mix: Mix,
    proto: Protocol,
    rng: PgPrng,
) -> Result<(User, Duration), WorkerError> {
    let started = Instant::now();
    let mut conn = startup::connect(target)
        .await
        .map_err(|e| WorkerError::Connect {
            target: target.display.clone(),
            reason: e.to_string(),
        })?;
    let sql = format!("{}$1", mix.sql());
    let preparing = |e: SqlError| WorkerError::Sql {
        context: "preparing the as3ap query".into(),
        reason: e.to_string(),
    };
    let template = match proto {
        Protocol::Simple => None,
        Protocol::Extended => Some(Template::unnamed(&sql, 1).map_err(preparing)?),
        Protocol::Prepared => Some(
            query::prepare(&mut conn, "as3ap_mix", &sql)
                .await
                .map_err(preparing)?,
        ),
    };
    Ok((
        User {
            conn,
            template,
            rows: Rows::default(),
            scratch: String::new(),
            rng,
        },
        started.elapsed(),
    ))
}

/// Runs `mix` with `t.clients` users against a database of `rows` rows per table.
pub async fn run_mix(
    t: &WindowParams,
    rows: u64,
    mix: Mix,
    progress: &ProgressSink,
    ctl: &LoadControl,
    go: Option<oneshot::Receiver<()>>,
) -> Result<LoadResult, WorkerError> {
    let proto = t.protocol;
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
    let begin = Instant::now();
    let opened = futures::future::join_all(
        (0..t.clients).map(|_| connect(&target, mix, proto, PgPrng::seed(base.next_u64()))),
    )
    .await;
    let mut users = Vec::with_capacity(opened.len());
    let mut conn_total = Duration::ZERO;
    for r in opened {
        let (u, d) = r?;
        conn_total += d;
        users.push(u);
    }
    let connection_elapsed = begin.elapsed();
    let cross = if t.client_id_offset == 0 {
        Some(Session::open(&target, rows).await?)
    } else {
        None
    };
    tracing::info!(
        mix = mix.class(),
        clients = t.clients,
        rows,
        "as3ap users connected"
    );
    if let Some(go) = go {
        progress.stage(blocklab_spec::Stage::Ready, "").await;
        tokio::select! {
            r = go => if r.is_err() { return Err(WorkerError::Run("the go signal was dropped".into())) },
            _ = ctl.stopped.notified() => return Err(WorkerError::Run("cancelled before the go".into())),
        }
    }
    let duration = t.duration;
    let start = Instant::now() + t.warmup;
    let w = Arc::new(Window {
        start,
        end: start + duration,
        seconds: duration.as_secs_f64().ceil().max(1.0) as usize,
        series: SharedSeries::new(duration.as_secs_f64().ceil().max(1.0) as usize),
    });
    let live = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = users
        .into_iter()
        .map(|u| {
            tokio::spawn(drive(
                mix,
                u,
                rows,
                w.clone(),
                ctl.stop.clone(),
                live.clone(),
            ))
        })
        .collect();
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
        let live = live.clone();
        move || live.load(Ordering::Relaxed)
    };
    let reporter = tokio::spawn(report_live(completed, progress.clone()));
    let cross = cross.map(|x| {
        let stop = ctl.stop.clone();
        tokio::spawn(async move {
            let tests = x.run(&stop).await;
            (x, tests)
        })
    });
    let mut total = ClientStats::new(w.seconds);
    let mut tuples = 0u64;
    let mut last_finish = w.start;
    for h in handles {
        let o = h
            .await
            .map_err(|_| WorkerError::Run("an as3ap user panicked".into()))?;
        total.merge(&o.stats);
        tuples += o.tuples;
        last_finish = last_finish.max(o.finished);
    }
    reporter.abort();
    total.seconds = w.series.snapshot();
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
