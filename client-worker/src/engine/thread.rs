//! One load thread: a current-thread runtime that connects its clients (under `-C` it only
//! checks that each can connect, as the transactions connect themselves), waits for the
//! common start, and runs each client's loop ([`crate::engine::txloop`]) as a task.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch};

use crate::engine::client::Session;
use crate::engine::control::{Go, Timeline};
use crate::engine::exec::ClientState;
use crate::engine::plan::Plan;
use crate::engine::shared::{ThreadRngs, ThreadShared};
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

type Ready = mpsc::UnboundedSender<Result<Vec<Duration>, WorkerError>>;

/// A thread's part of the run: its index in the run, its clients and random streams.
pub(crate) struct ThreadPart {
    pub tid: u32,
    pub clients: Vec<ClientState>,
    pub rngs: ThreadRngs,
}

pub(crate) fn run_thread(
    plan: &Arc<Plan>,
    part: ThreadPart,
    go: watch::Receiver<Go>,
    ready: Ready,
    stop: Arc<AtomicBool>,
) -> ThreadOutcome {
    let empty = |log_error| ThreadOutcome {
        stats: ClientStats::new(1),
        finished: Instant::now(),
        log_error,
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(WorkerError::Run(format!("cannot build runtime: {e}"))));
            return empty(None);
        }
    };
    let ThreadPart { tid, clients, rngs } = part;
    rt.block_on(async move {
        let opened = futures::future::join_all(clients.iter().map(|_| async {
            let t = Instant::now();
            let s = if plan.reconnect {
                Session::connect(plan).await
            } else {
                Session::open(plan).await
            };
            s.map(|s| (s, t.elapsed()))
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
        let times: Vec<Duration> = sessions.iter().map(|(_, t)| *t).collect();
        let mut sessions: Vec<Option<Session>> =
            sessions.into_iter().map(|(s, _)| Some(s)).collect();
        if plan.reconnect {
            // Under -C every transaction connects: these only proved the server admits
            // each client.
            for s in &mut sessions {
                if let Some(s) = s.take() {
                    s.close().await;
                }
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
        let _ = ready.send(match first_err {
            Some(e) => Err(e),
            None => Ok(times),
        });
        let Some(timeline) = wait_for_go(go).await else {
            for s in sessions.into_iter().flatten() {
                s.close().await;
            }
            return empty(None);
        };
        // One set of measurements for all clients of the thread: a histogram and a
        // per-second series per thread, whatever the number of clients.
        let mut stats = ClientStats::new(timeline.window_seconds);
        stats.grow = timeline.end.is_none();
        let stats = Arc::new(Mutex::new(stats));
        let shared = Arc::new(ThreadShared::new(rngs, log));
        shared.start_schedule(timeline.start);
        // Each client is a task of this thread's runtime that owns its socket, so the
        // socket's readiness wakes the client itself (no connection task between them).
        let mut handles = Vec::with_capacity(clients.len());
        for (session, mut st) in sessions.into_iter().zip(clients) {
            let (plan, stop, shared, stats) =
                (plan.clone(), stop.clone(), shared.clone(), stats.clone());
            handles.push(tokio::spawn(async move {
                let cx = Ctx {
                    plan: &plan,
                    shared: &shared,
                    stats: &stats,
                    tl: &timeline,
                    stop: &stop,
                };
                let session = client_loop(&cx, session, &mut st).await;
                let finished = Instant::now();
                if let Some(s) = session {
                    s.close().await;
                }
                (finished, std::mem::take(&mut st.steps))
            }));
        }
        let mut finished = timeline.window_start;
        for h in handles {
            match h.await {
                Ok((f, steps)) => {
                    finished = finished.max(f);
                    stats
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .merge_steps(&steps);
                }
                Err(e) => tracing::error!(error = %e, "client task failed"),
            }
        }
        let stats = std::mem::replace(
            &mut *stats.lock().unwrap_or_else(|p| p.into_inner()),
            ClientStats::new(1),
        );
        shared.finish_log();
        ThreadOutcome {
            stats,
            finished,
            log_error: shared.take_log_error(),
        }
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
