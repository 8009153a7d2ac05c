//! One load thread: a current-thread runtime that connects its clients, waits for the
//! common start, and drives them until the end of the window.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use tokio::sync::{mpsc, watch};

use crate::client::{Plan, Session};
use crate::error::{WorkerError, describe};
use crate::load::{Go, Timeline};
use crate::stats::ClientStats;

pub(crate) struct ThreadOutcome {
    pub stats: ClientStats,
    /// When the last client of this thread finished its last transaction.
    pub finished: Instant,
}

type Ready = mpsc::UnboundedSender<Result<Vec<Duration>, WorkerError>>;

pub(crate) fn run_thread(
    plan: &Arc<Plan>,
    clients: usize,
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
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let opened = futures::future::join_all((0..clients).map(|_| async {
            let t = Instant::now();
            Session::open(plan).await.map(|s| (s, t.elapsed()))
        }))
        .await;
        let mut sessions = Vec::with_capacity(clients);
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
        let results: Vec<Rc<RefCell<ClientStats>>> = (0..clients)
            .map(|_| Rc::new(RefCell::new(ClientStats::new(timeline.window_seconds))))
            .collect();
        let mut handles = Vec::with_capacity(clients);
        for ((session, _), stats) in sessions.into_iter().zip(&results) {
            let (plan, stats, stop) = (plan.clone(), stats.clone(), stop.clone());
            handles.push(tokio::task::spawn_local(async move {
                let session = client_loop(&plan, session, &timeline, &stats, &stop).await;
                let finished = Instant::now();
                if let Some(s) = session {
                    s.close().await;
                }
                finished
            }));
        }
        let mut finished = timeline.window_start;
        for h in handles {
            if let Ok(f) = h.await {
                finished = finished.max(f);
            }
        }
        let mut stats = ClientStats::new(timeline.window_seconds);
        for r in &results {
            stats.merge(&r.borrow());
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

/// Runs transactions until the end of the window. Transactions that start before the
/// window (warm-up) are not counted. Returns the session if it is still open.
async fn client_loop(
    plan: &Plan,
    mut session: Session,
    tl: &Timeline,
    stats: &RefCell<ClientStats>,
    stop: &AtomicBool,
) -> Option<Session> {
    let mut rng = SmallRng::from_rng(&mut rand::rng());
    let mut values = vec![0i64; plan.script.vars.len()];
    // Like pgbench, the end of one transaction is the start of the next (one clock read).
    let mut start = Instant::now();
    loop {
        if start >= tl.end || stop.load(Ordering::Relaxed) {
            return Some(session);
        }
        plan.script.draw(&mut rng, plan.scale, &mut values);
        let res = session.run_transaction(plan, &values).await;
        let end = Instant::now();
        let counted = start >= tl.window_start;
        let second = end.saturating_duration_since(tl.window_start).as_secs() as usize;
        match res {
            Ok(()) if counted => stats.borrow_mut().record(second, end - start),
            Ok(()) => {}
            Err(e) => {
                if counted {
                    stats.borrow_mut().record_failure(second, || describe(&e));
                }
                if session.is_broken() {
                    tracing::warn!(error = %describe(&e), "connection lost, reconnecting");
                    session = reconnect(plan, tl, stop).await?;
                    start = Instant::now();
                    continue;
                }
            }
        }
        start = end;
    }
}

async fn reconnect(plan: &Plan, tl: &Timeline, stop: &AtomicBool) -> Option<Session> {
    loop {
        if Instant::now() >= tl.end || stop.load(Ordering::Relaxed) {
            return None;
        }
        match Session::open(plan).await {
            Ok(s) => return Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "reconnect failed");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}
