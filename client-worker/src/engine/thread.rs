//! One load thread: connects its clients (under `-C` it only checks that each can connect,
//! as the transactions connect themselves), waits for the common start, and runs each
//! client's loop ([`crate::engine::txloop`]) as a task of the thread's own executor
//! ([`crate::engine::executor`]): one poller for the clients' sockets and one timer, a client
//! polled only when its socket or its deadline woke it. The wait for the start blocks the
//! thread outside the executor.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::engine::client::Session;
use crate::engine::control::Timeline;
use crate::engine::exec::ClientState;
use crate::engine::executor::Executor;
use crate::engine::plan::Plan;
use crate::engine::shared::{ThreadRngs, ThreadShared};
use crate::engine::spread::{Handshake, Kind};
use crate::engine::stats::ClientStats;
use crate::engine::txlog::{ThreadLog, epoch_us};
use crate::engine::txloop::{Ctx, client_loop};
use crate::error::WorkerError;

pub(crate) struct ThreadOutcome {
    pub stats: ClientStats,
    /// When the last client of this thread finished its last transaction.
    pub finished: Instant,
    /// The transaction log could not be written.
    pub log_error: Option<String>,
}

/// The pgbench engine's threads (`pgbench-load-0`, ...).
pub(crate) static KIND: Kind = Kind {
    name: "pgbench",
    panicked: "a load thread panicked",
};

/// A thread's part of the run: its index in the run, its clients and random streams.
pub(crate) struct ThreadPart {
    pub tid: u32,
    pub clients: Vec<ClientState>,
    pub rngs: ThreadRngs,
}

pub(crate) fn run_thread(
    plan: &Arc<Plan>,
    part: ThreadPart,
    mut hs: Handshake<Timeline>,
    stop: Arc<AtomicBool>,
) -> ThreadOutcome {
    let empty = |log_error| ThreadOutcome {
        stats: ClientStats::new(1),
        finished: Instant::now(),
        log_error,
    };
    let plan: &Plan = plan;
    let mut ex = match Executor::new() {
        Ok(ex) => ex,
        Err(e) => {
            hs.ready(Err(WorkerError::Run(format!(
                "cannot start the load thread's poller: {e}"
            ))));
            return empty(None);
        }
    };
    let ThreadPart { tid, clients, rngs } = part;
    let opened = ex.run(clients.iter().map(|_| async {
        let t = Instant::now();
        let s = if plan.reconnect {
            Session::connect(plan).await
        } else {
            Session::open(plan).await
        };
        s.map(|s| (s, t.elapsed()))
    }));
    let opened = match opened {
        Ok(o) => o,
        Err(e) => {
            hs.ready(Err(KIND.executor_error(&e)));
            return empty(None);
        }
    };
    // One slot per client, in the clients' order: the task of client `i` keeps token `i`.
    let mut sessions: Vec<Option<Session>> = Vec::with_capacity(clients.len());
    let mut times = Vec::with_capacity(clients.len());
    let mut first_err = None;
    for r in opened {
        match r {
            Ok((s, t)) => {
                sessions.push(Some(s));
                times.push(t);
            }
            Err(e) => {
                sessions.push(None);
                first_err.get_or_insert(e);
            }
        }
    }
    if plan.reconnect || first_err.is_some() {
        // Under -C every transaction connects: these only proved the server admits
        // each client.
        let closing = ex.run(sessions.iter_mut().map(|s| async {
            if let Some(s) = s.take() {
                s.close().await;
            }
        }));
        if let Err(e) = closing {
            first_err.get_or_insert(KIND.executor_error(&e));
        }
    }
    let log = match plan.log.as_ref() {
        Some(o) if first_err.is_none() => {
            match ThreadLog::create(o, tid, plan.log_fields, epoch_us()) {
                Ok(l) => Some(l),
                Err(e) => {
                    first_err = Some(WorkerError::Run(e.to_string()));
                    None
                }
            }
        }
        _ => None,
    };
    hs.ready(match first_err {
        Some(e) => Err(e),
        None => Ok(times),
    });
    let Some(timeline) = hs.wait_for_go() else {
        let _ = ex.run(sessions.into_iter().flatten().map(Session::close));
        return empty(None);
    };
    // One set of measurements for all clients of the thread: a histogram and a
    // per-second series per thread, whatever the number of clients.
    let mut stats = ClientStats::new(timeline.window_seconds);
    stats.grow = timeline.end.is_none();
    let stats = Mutex::new(stats);
    let shared = ThreadShared::new(rngs, log);
    shared.start_schedule(timeline.start);
    let cx = Ctx {
        plan,
        shared: &shared,
        stats: &stats,
        tl: &timeline,
        stop: &stop,
    };
    // Each client is a task that owns its socket, so the socket's readiness wakes the
    // client itself (no connection task between them).
    let ran = ex.run(sessions.into_iter().zip(clients).map(|(session, mut st)| {
        let cx = &cx;
        async move {
            let session = client_loop(cx, session, &mut st).await;
            let finished = Instant::now();
            if let Some(s) = session {
                s.close().await;
            }
            (finished, std::mem::take(&mut st.steps))
        }
    }));
    let mut finished = timeline.window_start;
    let mut stats = stats.into_inner().unwrap_or_else(|p| p.into_inner());
    match ran {
        Ok(ran) => {
            for (f, steps) in ran {
                finished = finished.max(f);
                stats.merge_steps(&steps);
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "load thread executor failed");
            stats
                .first_error
                .get_or_insert_with(|| KIND.executor_error(&e).to_string());
            stats.aborted += 1;
        }
    }
    shared.finish_log();
    ThreadOutcome {
        stats,
        finished,
        log_error: shared.take_log_error(),
    }
}
