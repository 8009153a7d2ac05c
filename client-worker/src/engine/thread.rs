//! One load thread: a current-thread runtime that connects its clients, waits for the
//! common start, and drives each client's transactions until the end of the window or
//! its transaction count: rate-limit schedule, latency limit, retries, reconnects.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::engine::client::Session;
use crate::engine::control::{Go, Timeline};
use crate::engine::exec::{ClientState, TxnError};
use crate::engine::plan::Plan;
use crate::engine::stats::ClientStats;
use crate::error::WorkerError;

pub(crate) struct ThreadOutcome {
    pub stats: ClientStats,
    /// When the last client of this thread finished its last transaction.
    pub finished: Instant,
}

type Ready = mpsc::UnboundedSender<Result<Vec<Duration>, WorkerError>>;

pub(crate) fn run_thread(
    plan: &Arc<Plan>,
    clients: Vec<ClientState>,
    go: watch::Receiver<Go>,
    ready: Ready,
    stop: Arc<AtomicBool>,
) -> ThreadOutcome {
    let empty = || ThreadOutcome {
        stats: ClientStats::new(1),
        finished: Instant::now(),
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(WorkerError::Run(format!("cannot build runtime: {e}"))));
            return empty();
        }
    };
    // The clients are futures driven together by block_on (no LocalSet: it costs an
    // extra epoll_wait per transaction).
    rt.block_on(async move {
        let opened = futures::future::join_all(clients.iter().map(|_| async {
            let t = Instant::now();
            Session::open(plan).await.map(|s| (s, t.elapsed()))
        }))
        .await;
        let mut sessions = Vec::with_capacity(clients.len());
        let mut first_err = None;
        for r in opened {
            match r {
                Ok(s) => sessions.push(s),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        let times = sessions.iter().map(|(_, t)| *t).collect();
        let _ = ready.send(match first_err {
            Some(e) => Err(e),
            None => Ok(times),
        });
        let Some(timeline) = wait_for_go(go).await else {
            for (s, _) in sessions {
                s.close().await;
            }
            return empty();
        };
        let new_stats = || {
            let mut s = ClientStats::new(timeline.window_seconds);
            s.grow = timeline.end.is_none();
            s
        };
        // Each client is a task of this thread's runtime, so the connection task's wakeup
        // schedules it directly (driving them inside block_on costs an extra epoll_wait per
        // transaction).
        let mut handles = Vec::with_capacity(clients.len());
        for ((session, _), mut st) in sessions.into_iter().zip(clients) {
            let (plan, stop) = (plan.clone(), stop.clone());
            let mut stats = new_stats();
            handles.push(tokio::spawn(async move {
                let session =
                    client_loop(&plan, session, &mut st, &timeline, &mut stats, &stop).await;
                let finished = Instant::now();
                stats.steps = std::mem::take(&mut st.steps);
                if let Some(s) = session {
                    s.close().await;
                }
                (finished, stats)
            }));
        }
        let mut finished = timeline.window_start;
        let mut stats = new_stats();
        for h in handles {
            match h.await {
                Ok((f, s)) => {
                    finished = finished.max(f);
                    stats.merge(&s);
                }
                Err(e) => tracing::error!(error = %e, "client task failed"),
            }
        }
        ThreadOutcome { stats, finished }
    })
}

async fn wait_for_go(mut go: watch::Receiver<Go>) -> Option<Timeline> {
    loop {
        match *go.borrow_and_update() {
            Go::Start(t) => return Some(t),
            Go::Abort => return None,
            Go::Wait => {}
        }
        if go.changed().await.is_err() {
            return None;
        }
    }
}

fn over(tl: &Timeline, plan: &Plan, done: u64, stop: &AtomicBool) -> bool {
    stop.load(Ordering::Relaxed)
        || tl.end.is_some_and(|e| Instant::now() >= e)
        || (plan.transactions_per_client > 0 && done >= plan.transactions_per_client)
}

/// Runs transactions until the end. Transactions that start before the window (warm-up)
/// are not counted. Returns the session if it is still open.
async fn client_loop(
    plan: &Plan,
    session: Session,
    st: &mut ClientState,
    tl: &Timeline,
    stats: &mut ClientStats,
    stop: &AtomicBool,
) -> Option<Session> {
    let mut session = Some(session);
    let mut done = 0u64;
    let mut last_end = Instant::now();
    let mut next_sched = tl.start;
    let limit = plan.latency_limit_us.map(Duration::from_micros);
    loop {
        if over(tl, plan, done, stop) {
            return session;
        }
        // With a rate limit, a transaction starts at its scheduled time and its latency
        // counts from there; too-late ones are skipped under a latency limit.
        let start = match plan.throttle_delay_us {
            Some(delay) => {
                next_sched += Duration::from_micros(st.throttle_rng.poisson(delay).max(0) as u64);
                if let Some(l) = limit {
                    while Instant::now() > next_sched + l && !over(tl, plan, done, stop) {
                        if next_sched >= tl.window_start {
                            stats.skipped += 1;
                            if plan.track_live {
                                plan.live.skipped.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        done += 1;
                        next_sched +=
                            Duration::from_micros(st.throttle_rng.poisson(delay).max(0) as u64);
                    }
                    if over(tl, plan, done, stop) {
                        return session;
                    }
                }
                tokio::time::sleep_until(tokio::time::Instant::from_std(next_sched)).await;
                if over(tl, plan, done, stop) {
                    return session;
                }
                if next_sched >= tl.window_start {
                    let lag = Instant::now().saturating_duration_since(next_sched);
                    stats.record_lag(lag);
                    if plan.track_live {
                        plan.live
                            .lag_sum_us
                            .fetch_add(lag.as_micros() as u64, Ordering::Relaxed);
                    }
                }
                next_sched
            }
            None => last_end,
        };
        if session.is_none() {
            session = reconnect(plan, tl, stop).await;
            session.as_ref()?;
        }
        let s = session.as_ref().expect("connected above");
        let si = plan.scripts.choose(&mut st.choose_rng);
        let saved = st.rng;
        let mut tries = 0u32;
        let res = loop {
            tries += 1;
            let r = st.run_script(plan, s, si).await;
            let in_time = limit.is_none_or(|l| start.elapsed() < l) && !over(tl, plan, done, stop);
            match r {
                Err(TxnError::Sql {
                    retryable: true, ..
                }) if (plan.max_tries == 0 || tries < plan.max_tries) && in_time => {
                    s.rollback().await;
                    st.rng = saved;
                }
                other => break other,
            }
        };
        let end = Instant::now();
        done += 1;
        let counted = start >= tl.window_start;
        let second = end.saturating_duration_since(tl.window_start).as_secs() as usize;
        let failed = {
            let b = &mut *stats;
            if counted && tries > 1 {
                b.retries += u64::from(tries - 1);
                b.retried += 1;
            }
            match res {
                Ok(()) => {
                    if counted {
                        let lat = end - start;
                        b.record(second, lat);
                        b.record_script(si, Some(lat));
                        b.late += u64::from(limit.is_some_and(|l| lat > l));
                        if plan.track_live {
                            plan.live.add(lat.as_micros() as u64);
                        }
                    }
                    None
                }
                Err(TxnError::Abort { step, message }) => {
                    let cmd = plan.scripts.scripts[si]
                        .script
                        .steps
                        .get(step)
                        .map_or("end", |s| kind(&s.command));
                    let msg = format!(
                        "client {} aborted in command {step} ({cmd}) of script {si}; {message}",
                        st.id
                    );
                    tracing::error!(client = st.id, script = si, command = step, error = %message, "client aborted");
                    b.aborted += 1;
                    b.first_error.get_or_insert(msg);
                    Some(None)
                }
                Err(e @ TxnError::Sql { .. }) => {
                    if counted {
                        b.record_failure(second, || e.describe());
                        b.record_script(si, None);
                        if plan.track_live {
                            plan.live.failures.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    Some(Some(e))
                }
            }
        };
        // Some(None): the client aborted; Some(Some(e)): an SQL failure.
        let failed = match failed {
            Some(None) => return session,
            Some(Some(e)) => Some(e),
            None => None,
        };
        if let Some(e) = failed {
            // Rolling back first also lets a dying connection be seen as closed.
            s.rollback().await;
            if s.is_broken() {
                tracing::warn!(client = st.id, error = %e.describe(), "connection lost, reconnecting");
                session = None;
            }
        }
        if plan.reconnect
            && let Some(s) = session.take()
        {
            s.close().await;
        }
        last_end = Instant::now();
    }
}
fn kind(c: &blocklab_script::parse::Command) -> &'static str {
    use blocklab_script::parse::Command::*;
    match c {
        Sql(_) => "SQL",
        Set(..) => "set",
        Sleep(_) => "sleep",
        If(..) => "if",
        Elif(..) => "elif",
        Else(_) => "else",
        Endif => "endif",
        StartPipeline => "startpipeline",
        EndPipeline => "endpipeline",
        Shell(_) => "shell",
        SetShell(..) => "setshell",
    }
}

async fn reconnect(plan: &Plan, tl: &Timeline, stop: &AtomicBool) -> Option<Session> {
    loop {
        if tl.end.is_some_and(|e| Instant::now() >= e) || stop.load(Ordering::Relaxed) {
            return None;
        }
        match Session::open(plan).await {
            Ok(s) => return Some(s),
            Err(e) if plan.reconnect => {
                tracing::warn!(error = %e, "connection failed");
                return None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reconnect failed");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}
