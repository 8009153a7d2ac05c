//! The load threads of every kind of run (the pgbench engine's clients,
//! [`crate::engine::thread`]; the TPC-C-like terminals; the AS3AP-like users): a run's
//! sessions split over OS threads
//! (pgbench's split: the first `sessions % threads` threads take one more), each thread
//! connecting its share and running it as tasks of its own executor
//! ([`crate::engine::executor`]). The run itself stays on tokio; between it and its threads
//! go each thread's readiness (its sessions' connection times, or the error that stopped
//! it), the start (or an abort) once every thread is ready, and each thread's outcome. A
//! thread that panics halts the others' sessions and is reported as the run's error, never
//! waited for; a run dropped before its threads finished aborts and halts them too. Each
//! thread has its own ready channel, so one that panics before it is ready is seen as such.
//! [`Handshake::open`] is the drivers' whole start: connect, report ready, wait for the go.

use std::future::Future;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};

use crate::engine::executor::Executor;
use crate::error::WorkerError;

/// The threads a share of `sessions` runs on: `requested`, or as many as the machine has
/// cores when it is 0; at most one a session, at least one.
pub(crate) fn thread_count(requested: u32, sessions: u32) -> u32 {
    let n = if requested == 0 {
        std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
    } else {
        requested
    };
    n.min(sessions).max(1)
}

/// The sessions (indexes into the worker's share) of each of `threads` threads.
pub(crate) fn split(sessions: u32, threads: u32) -> Vec<Range<u32>> {
    let threads = threads.max(1);
    let mut first = 0;
    (0..threads)
        .map(|t| {
            let n = sessions / threads + u32::from(t < sessions % threads);
            let r = first..first + n;
            first += n;
            r
        })
        .collect()
}

/// The start as the threads see it.
#[derive(Clone, Copy, Debug)]
enum Go<T> {
    Wait,
    Start(T),
    Abort,
}

/// A thread's sessions' connection times, or why it could not connect them.
type Ready = Result<Vec<Duration>, WorkerError>;

/// What a thread's sessions do to stop at once (the run's abort flag).
pub(crate) type Halt = Arc<dyn Fn() + Send + Sync>;

/// A driver's name for its threads (`tpcc` gives `tpcc-load-0`, ...) and the error a
/// panicking one becomes.
pub(crate) struct Kind {
    pub name: &'static str,
    pub panicked: &'static str,
}

impl Kind {
    /// A thread's executor failed while it ran the thread's sessions.
    pub fn executor_error(&self, e: &std::io::Error) -> WorkerError {
        WorkerError::Run(format!("{} load thread executor failed: {e}", self.name))
    }
}

/// A thread's side of the handshake with its run.
pub(crate) struct Handshake<T> {
    kind: &'static Kind,
    ready: Option<oneshot::Sender<Ready>>,
    go: watch::Receiver<Go<T>>,
}

impl<T: Copy> Handshake<T> {
    /// The thread's executor failed while it ran the thread's sessions.
    pub fn executor_error(&self, e: &std::io::Error) -> WorkerError {
        self.kind.executor_error(e)
    }

    /// Reports the thread's sessions connected (their connection times), or its error.
    pub fn ready(&mut self, r: Ready) {
        if let Some(tx) = self.ready.take() {
            let _ = tx.send(r);
        }
    }

    /// Blocks the thread (outside its executor) until the start: its value, or None when
    /// the run was aborted.
    pub fn wait_for_go(&mut self) -> Option<T> {
        futures::executor::block_on(async {
            loop {
                match *self.go.borrow_and_update() {
                    Go::Start(t) => return Some(t),
                    Go::Abort => return None,
                    Go::Wait => {}
                }
                if self.go.changed().await.is_err() {
                    return None;
                }
            }
        })
    }
}

impl<T: Copy> Handshake<T> {
    /// A driver thread's start: makes the thread's executor, opens its sessions on it (each
    /// `opens` future gives a session and its connection time), reports ready, and waits for
    /// the start. `None` when the thread cannot start (its error is its readiness) or the run
    /// was aborted; the sessions it opened are then closed with `close`.
    pub fn open<S, Open, Close, Closing>(
        &mut self,
        opens: impl IntoIterator<Item = Open>,
        close: Close,
    ) -> Option<(Executor, Vec<S>, T)>
    where
        Open: Future<Output = Result<(S, Duration), WorkerError>>,
        Close: FnMut(S) -> Closing,
        Closing: Future<Output = ()>,
    {
        let mut ex = match Executor::new() {
            Ok(ex) => ex,
            Err(e) => {
                self.ready(Err(WorkerError::Run(format!(
                    "cannot start the {} load thread's poller: {e}",
                    self.kind.name
                ))));
                return None;
            }
        };
        let opened = match ex.run(opens) {
            Ok(o) => o,
            Err(e) => {
                self.ready(Err(self.kind.executor_error(&e)));
                return None;
            }
        };
        // One slot per session, in order: the task of session `i` keeps token `i`.
        let mut sessions = Vec::with_capacity(opened.len());
        let mut times = Vec::with_capacity(opened.len());
        let mut first_err = None;
        for r in opened {
            match r {
                Ok((session, took)) => {
                    sessions.push(session);
                    times.push(took);
                }
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            let _ = ex.run(sessions.into_iter().map(close));
            self.ready(Err(e));
            return None;
        }
        self.ready(Ok(times));
        match self.wait_for_go() {
            Some(go) => Some((ex, sessions, go)),
            None => {
                let _ = ex.run(sessions.into_iter().map(close));
                None
            }
        }
    }
}

/// Halts the run's sessions when the thread unwinds from a panic.
struct HaltOnPanic(Halt);

impl Drop for HaltOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

/// The run's side: its threads' readiness, their start and their outcomes.
pub(crate) struct LoadThreads<T, O> {
    kind: &'static Kind,
    go: watch::Sender<Go<T>>,
    ready: Vec<oneshot::Receiver<Ready>>,
    done: Vec<oneshot::Receiver<O>>,
    halt: Halt,
    finished: bool,
}

/// Starts one thread a part, each running `body(part, handshake)`; `halt` stops every
/// thread's sessions (called when a thread panics, or when the run is dropped first).
pub(crate) fn spawn<P, T, O, F>(
    kind: &'static Kind,
    parts: Vec<P>,
    halt: Halt,
    body: F,
) -> Result<LoadThreads<T, O>, WorkerError>
where
    P: Send + 'static,
    T: Copy + Send + Sync + 'static,
    O: Send + 'static,
    F: FnOnce(P, Handshake<T>) -> O + Clone + Send + 'static,
{
    let (go, go_rx) = watch::channel(Go::Wait);
    let mut threads = LoadThreads {
        kind,
        go,
        ready: Vec::with_capacity(parts.len()),
        done: Vec::with_capacity(parts.len()),
        halt,
        finished: false,
    };
    for (i, part) in parts.into_iter().enumerate() {
        let (ready_tx, ready_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let hs = Handshake {
            kind,
            ready: Some(ready_tx),
            go: go_rx.clone(),
        };
        let (body, guard) = (body.clone(), HaltOnPanic(threads.halt.clone()));
        // On an error the threads started so far are aborted as `threads` drops.
        std::thread::Builder::new()
            .name(format!("{}-load-{i}", kind.name))
            .spawn(move || {
                let _guard = guard;
                let _ = done_tx.send(body(part, hs));
            })
            .map_err(|e| {
                WorkerError::Run(format!("cannot start a {} load thread: {e}", kind.name))
            })?;
        threads.ready.push(ready_rx);
        threads.done.push(done_rx);
    }
    Ok(threads)
}

impl<T, O> LoadThreads<T, O> {
    fn panicked(&self) -> WorkerError {
        WorkerError::Run(self.kind.panicked.into())
    }

    /// Waits until every thread is ready: the connection time summed over all sessions, or
    /// the first error in the threads' order (then [`LoadThreads::abort`] them).
    pub async fn ready(&mut self) -> Result<Duration, WorkerError> {
        let mut total = Duration::ZERO;
        let mut first_err = None;
        for rx in std::mem::take(&mut self.ready) {
            match rx.await {
                Ok(Ok(times)) => total += times.iter().sum::<Duration>(),
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert_with(|| self.panicked());
                }
            }
        }
        first_err.map_or(Ok(total), Err)
    }

    /// Starts every thread with `t`.
    pub fn start(&self, t: T) {
        self.go.send_replace(Go::Start(t));
    }

    /// Aborts the threads before the start and waits until they have closed their sessions.
    pub async fn abort(mut self) {
        self.go.send_replace(Go::Abort);
        for rx in std::mem::take(&mut self.done) {
            let _ = rx.await;
        }
        self.finished = true;
    }

    /// Every thread's outcome, in the threads' order, once all have finished; an error if
    /// one panicked.
    pub async fn finish(mut self) -> Result<Vec<O>, WorkerError> {
        let mut outcomes = Vec::with_capacity(self.done.len());
        let mut panicked = false;
        for rx in std::mem::take(&mut self.done) {
            match rx.await {
                Ok(o) => outcomes.push(o),
                Err(_) => panicked = true,
            }
        }
        self.finished = true;
        if panicked {
            tracing::error!(kind = self.kind.name, "a load thread panicked");
            return Err(self.panicked());
        }
        Ok(outcomes)
    }
}

impl<T, O> Drop for LoadThreads<T, O> {
    fn drop(&mut self) {
        if !self.finished {
            self.go.send_replace(Go::Abort);
            (self.halt)();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    static KIND: Kind = Kind {
        name: "test",
        panicked: "a test load thread panicked",
    };

    #[test]
    fn sessions_split_as_pgbench_splits_clients() {
        assert_eq!(split(8, 2), vec![0..4, 4..8]);
        assert_eq!(split(5, 3), vec![0..2, 2..4, 4..5]);
        assert_eq!(split(1, 1), vec![0..1]);
        assert_eq!(thread_count(4, 2), 2);
        assert_eq!(thread_count(2, 8), 2);
        assert_eq!(thread_count(0, 1), 1);
        assert!(thread_count(0, 1000) >= 1);
    }

    /// A thread that panics after the start halts the others and fails the run; one that
    /// panics before it is ready fails the wait for readiness.
    #[tokio::test]
    async fn a_panicking_thread_is_an_error_not_a_hang() {
        let halted = Arc::new(AtomicBool::new(false));
        let flag = halted.clone();
        let halt: Halt = Arc::new(move || flag.store(true, Ordering::Relaxed));
        let stop = halted.clone();
        let mut threads = spawn(&KIND, vec![0, 1], halt.clone(), move |i: u32, mut hs| {
            hs.ready(Ok(vec![Duration::from_millis(1)]));
            let started: Option<u32> = hs.wait_for_go();
            if i == 1 {
                panic!("thread {i} fails");
            }
            // The other thread runs until halted.
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            started
        })
        .unwrap();
        assert_eq!(threads.ready().await.unwrap(), Duration::from_millis(2));
        threads.start(7);
        let e = tokio::time::timeout(Duration::from_secs(10), threads.finish())
            .await
            .expect("the run ends")
            .unwrap_err();
        assert_eq!(e.to_string(), "a test load thread panicked");
        assert!(halted.load(Ordering::Relaxed));

        let mut threads = spawn(&KIND, vec![0, 1], halt, |i: u32, mut hs| {
            if i == 0 {
                panic!("thread {i} fails");
            }
            hs.ready(Ok(vec![]));
            let go: Option<u32> = hs.wait_for_go();
            go
        })
        .unwrap();
        let e = threads.ready().await.unwrap_err();
        assert!(e.to_string().contains("a test load thread panicked"), "{e}");
        tokio::time::timeout(Duration::from_secs(10), threads.abort())
            .await
            .expect("the threads end");
    }

    #[tokio::test]
    async fn threads_get_the_start_and_return_in_order() {
        let halt: Halt = Arc::new(|| {});
        let mut threads = spawn(&KIND, vec![10u32, 20, 30], halt, |p, mut hs| {
            hs.ready(Ok(vec![]));
            hs.wait_for_go().map(|go: u32| go + p)
        })
        .unwrap();
        threads.ready().await.unwrap();
        threads.start(1);
        assert_eq!(
            threads.finish().await.unwrap(),
            vec![Some(11), Some(21), Some(31)]
        );
    }
}
