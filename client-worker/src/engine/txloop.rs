//! One client's transactions, in the order pgbench's state machine runs them: choose a
//! script (from the thread's stream), take the thread's next scheduled start under `-R`
//! (skipping slots already too late for `-L`), connect under `-C` (timed apart from the
//! latency), run the script with retries of serialization failures and deadlocks, count
//! and log the outcome, disconnect under `-C`. Other SQL errors and script errors abort
//! the client unless the run continues on errors.
//!
//! The loop runs as a task of its load thread's executor (`crate::engine::executor`): it
//! waits only on its own socket and on instants. The clock is read once per event: the
//! reading that decides whether another transaction starts is also its start, and the one
//! that ends a wait or a connection starts what follows.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::engine::client::Session;
use crate::engine::control::Timeline;
use crate::engine::exec::{ClientState, TxnError};
use crate::engine::executor::sleep_until;
use crate::engine::plan::Plan;
use crate::engine::shared::ThreadShared;
use crate::engine::stats::{ClientStats, FailureKind};
use crate::engine::txlog::{TxOutcome, TxRecord};

/// Where a client runs: the run, its thread, the thread's measurements, the timeline and
/// the stop flag.
pub(crate) struct Ctx<'a> {
    pub plan: &'a Plan,
    pub shared: &'a ThreadShared,
    pub stats: &'a Mutex<ClientStats>,
    pub tl: &'a Timeline,
    pub stop: &'a AtomicBool,
}

impl Ctx<'_> {
    /// The thread's measurements (never held across an await).
    fn stats(&self) -> std::sync::MutexGuard<'_, ClientStats> {
        self.stats.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.plan.abort_all.load(Ordering::Relaxed)
    }

    fn timer_exceeded(&self) -> bool {
        self.stopped() || self.tl.end.is_some_and(|e| Instant::now() >= e)
    }

    /// [`Ctx::timer_exceeded`] with the clock read at `now`.
    fn exceeded_at(&self, now: Instant) -> bool {
        self.stopped() || self.tl.end.is_some_and(|e| now >= e)
    }

    fn over_at(&self, cnt: u64, now: Instant) -> bool {
        self.exceeded_at(now)
            || (self.plan.transactions_per_client > 0 && cnt >= self.plan.transactions_per_client)
    }

    fn second(&self, at: Instant) -> usize {
        at.saturating_duration_since(self.tl.window_start).as_secs() as usize
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Runs transactions until the end; returns the session if it is still open. Transactions
/// scheduled before the window (warm-up) are not counted.
pub(crate) async fn client_loop(
    cx: &Ctx<'_>,
    mut session: Option<Session>,
    st: &mut ClientState,
) -> Option<Session> {
    let plan = cx.plan;
    let limit = plan.latency_limit_us.map(Duration::from_micros);
    loop {
        let mut now = Instant::now();
        if cx.over_at(st.cnt, now) {
            return session;
        }
        let si = cx.shared.choose(|r| plan.scripts.choose(r));
        let scheduled = match plan.throttle_delay_us {
            None => None,
            Some(delay) => {
                let sched = loop {
                    let sched = cx.shared.next_scheduled(delay);
                    match limit {
                        Some(l) if sched + l < now => {
                            if sched >= cx.tl.window_start {
                                cx.stats().skipped += 1;
                                if plan.track_live {
                                    plan.live.skipped.fetch_add(1, Ordering::Relaxed);
                                }
                                log(cx, st, si, TxOutcome::Skipped, 0.0, 1);
                            }
                            st.cnt += 1;
                            if cx.over_at(st.cnt, now) {
                                return session;
                            }
                        }
                        _ => break sched,
                    }
                };
                if cx.tl.end.is_some_and(|e| sched > e) {
                    return session;
                }
                if sched > now {
                    sleep_until(sched).await;
                    now = Instant::now();
                    if cx.exceeded_at(now) {
                        return session;
                    }
                }
                Some(sched)
            }
        };
        let counted = scheduled.unwrap_or(now) >= cx.tl.window_start;
        if session.is_none() {
            let t0 = now;
            session = connect(cx, st).await;
            now = Instant::now();
            if counted {
                cx.stats().conn_us += us(now - t0);
            }
            if session.is_none() {
                if !cx.timer_exceeded() {
                    abort(
                        cx,
                        st,
                        format!("client {} aborted while establishing connection", st.id),
                    );
                }
                return None;
            }
        }
        let s = session.as_mut().expect("connected above");
        let begin = now;
        let sched = scheduled.unwrap_or(begin);
        s.prepare(plan).await;
        let saved = st.rng;
        let mut tries = 0u32;
        let res = loop {
            tries += 1;
            match st.run_script(plan, &mut *s, si).await {
                Err(
                    e @ TxnError::Sql {
                        retryable: true, ..
                    },
                ) => {
                    if plan.verbose_errors {
                        eprintln!(
                            "client {} got an error in command {} (SQL) of script {si}; {}",
                            st.id,
                            e.step(),
                            e.libpq_message()
                        );
                    }
                    s.rollback().await;
                    if cx.timer_exceeded() {
                        return session;
                    }
                    let may_retry = (plan.max_tries == 0 || tries < plan.max_tries)
                        && limit.is_none_or(|l| sched.elapsed() < l);
                    if plan.verbose_errors {
                        verbose_try(plan, st.id, tries, sched, may_retry);
                    }
                    if !may_retry {
                        break Err(e);
                    }
                    st.count_error(si, e.step(), true);
                    st.rng = saved;
                }
                other => break other,
            }
        };
        let end = Instant::now();
        if counted && tries > 1 {
            let mut stats = cx.stats();
            stats.retries += u64::from(tries - 1);
            stats.retried += 1;
        }
        let second = cx.second(end);
        match res {
            Ok(()) => {
                if counted {
                    let lat = end - sched;
                    let lag = begin.saturating_duration_since(sched);
                    let mut stats = cx.stats();
                    stats.record(second, lat);
                    stats.record_script(si, Some(lat));
                    stats.late += u64::from(limit.is_some_and(|l| lat > l));
                    if scheduled.is_some() {
                        stats.record_lag(lag);
                    }
                    drop(stats);
                    if plan.track_live {
                        plan.live.add(lat.as_micros() as u64);
                        if scheduled.is_some() {
                            plan.live
                                .lag_sum_us
                                .fetch_add(lag.as_micros() as u64, Ordering::Relaxed);
                        }
                    }
                    let done = TxOutcome::Done {
                        latency_us: us(lat).round(),
                    };
                    log(cx, st, si, done, us(lag).round(), tries);
                }
            }
            Err(e) => {
                let kind = e.failure_kind();
                let continues = matches!(
                    kind,
                    Some(FailureKind::Serialization | FailureKind::Deadlock)
                ) || (kind == Some(FailureKind::Other) && plan.continue_on_error);
                if !continues {
                    let msg = abort_message(plan, st.id, si, &e);
                    abort(cx, st, msg);
                    return session;
                }
                let kind = kind.expect("an SQL failure");
                st.count_error(si, e.step(), false);
                if counted {
                    let mut stats = cx.stats();
                    stats.record_failure_of(second, kind, || e.describe());
                    stats.record_script(si, None);
                    drop(stats);
                    if plan.track_live {
                        plan.live.failures.fetch_add(1, Ordering::Relaxed);
                    }
                    let outcome = match kind {
                        FailureKind::Serialization => TxOutcome::Serialization,
                        FailureKind::Deadlock => TxOutcome::Deadlock,
                        FailureKind::Other => TxOutcome::Other,
                    };
                    log(cx, st, si, outcome, 0.0, tries);
                }
                if kind == FailureKind::Other {
                    // Rolling back first also lets a dying connection be seen as closed.
                    s.rollback().await;
                }
                if s.is_broken() {
                    tracing::warn!(client = st.id, error = %e.describe(), "connection lost, reconnecting");
                    session = None;
                }
            }
        }
        st.cnt += 1;
        if plan.reconnect
            && let Some(s) = session.take()
        {
            let t0 = Instant::now();
            s.close().await;
            if counted {
                cx.stats().conn_us += us(t0.elapsed());
            }
        }
    }
}

fn log(cx: &Ctx<'_>, st: &ClientState, si: usize, outcome: TxOutcome, lag_us: f64, tries: u32) {
    if cx.plan.log.is_some() {
        cx.shared.log(&TxRecord {
            client: st.id,
            // pgbench counts the transaction before logging it: numbers start at 1.
            cnt: st.cnt + 1,
            outcome,
            script: si,
            lag_us,
            tries,
        });
    }
}

fn abort(cx: &Ctx<'_>, st: &ClientState, msg: String) {
    tracing::error!(client = st.id, "{msg}");
    let mut stats = cx.stats();
    stats.aborted += 1;
    stats.first_error.get_or_insert(msg);
    if cx.plan.exit_on_abort {
        cx.plan.abort_all.store(true, Ordering::Relaxed);
    }
}

/// A new connection: one try under `-C` (pgbench aborts the client when it fails); after
/// a lost connection (only when continuing on errors), retried until the end.
async fn connect(cx: &Ctx<'_>, st: &ClientState) -> Option<Session> {
    loop {
        if cx.timer_exceeded() {
            return None;
        }
        match Session::connect(cx.plan).await {
            Ok(s) => return Some(s),
            Err(e) if cx.plan.reconnect => {
                tracing::warn!(client = st.id, error = %e, "connection failed");
                return None;
            }
            Err(e) => {
                tracing::warn!(client = st.id, error = %e, "reconnect failed");
                sleep_until(Instant::now() + Duration::from_millis(200)).await;
            }
        }
    }
}

/// pgbench's words for an aborted client.
fn abort_message(plan: &Plan, client: i64, si: usize, e: &TxnError) -> String {
    match e {
        TxnError::Sql { step, .. } => format!(
            "client {client} script {si} aborted in command {step} query 0: {}",
            e.describe()
        ),
        TxnError::Abort { step, message } => {
            let cmd = plan.scripts.scripts[si]
                .script
                .steps
                .get(*step)
                .map_or("end", |s| kind(&s.command));
            format!("client {client} aborted in command {step} ({cmd}) of script {si}; {message}")
        }
    }
}

/// `--verbose-errors`: whether the transaction is tried again, as pgbench prints it.
fn verbose_try(plan: &Plan, client: i64, tries: u32, sched: Instant, retry: bool) {
    let mut s = format!(
        "client {client} {} (try {tries}",
        if retry {
            "repeats the transaction after the error"
        } else {
            "ends the failed transaction"
        }
    );
    if plan.max_tries > 0 {
        s.push_str(&format!("/{}", plan.max_tries));
    }
    if let Some(l) = plan.latency_limit_us {
        let used = 100.0 * us(sched.elapsed()) / l as f64;
        s.push_str(&format!(
            ", {used:.3}% of the maximum time of tries was used"
        ));
    }
    eprintln!("{s})");
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
        SyncPipeline => "syncpipeline",
        EndPipeline => "endpipeline",
        Shell(_) => "shell",
        SetShell(..) => "setshell",
    }
}
