//! What the clients of one load thread share, as pgbench's TState: the script-choice,
//! rate-limit and log-sampling random streams, the one rate-limit schedule (`-R` is split
//! evenly over threads, and each thread draws one Poisson schedule its clients take turns
//! on), the connection time spent under `-C`, and the thread's transaction log.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use blocklab_script::prng::PgPrng;

use crate::engine::txlog::{ThreadLog, TxRecord, epoch_us};

/// The three random streams of a thread, drawn from the run's seed after the clients' ones.
#[derive(Clone, Copy, Debug)]
pub struct ThreadRngs {
    pub choose: PgPrng,
    pub throttle: PgPrng,
    pub sample: PgPrng,
}

struct Inner {
    rngs: ThreadRngs,
    /// The last scheduled start handed out (pgbench's throttle_trigger).
    trigger: Instant,
    log: Option<ThreadLog>,
    log_error: Option<String>,
}

/// One thread's shared state; its clients are tasks of the thread's runtime, so the lock
/// is never contended across OS threads and is never held across an await.
pub struct ThreadShared {
    inner: Mutex<Inner>,
}

impl ThreadShared {
    pub fn new(rngs: ThreadRngs, log: Option<ThreadLog>) -> ThreadShared {
        ThreadShared {
            inner: Mutex::new(Inner {
                rngs,
                trigger: Instant::now(),
                log,
                log_error: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the schedule at the thread's start, as pgbench does.
    pub fn start_schedule(&self, at: Instant) {
        self.lock().trigger = at;
    }

    /// The next scheduled start: the thread's previous one plus a Poisson delay around
    /// `delay_us` (the thread's share of the rate).
    pub fn next_scheduled(&self, delay_us: f64) -> Instant {
        let mut g = self.lock();
        let d = g.rngs.throttle.poisson(delay_us).max(0) as u64;
        g.trigger += Duration::from_micros(d);
        g.trigger
    }

    /// A weighted script choice from the thread's stream.
    pub fn choose(&self, pick: impl FnOnce(&mut PgPrng) -> usize) -> usize {
        pick(&mut self.lock().rngs.choose)
    }

    pub fn logging(&self) -> bool {
        self.lock().log.is_some()
    }

    pub fn log(&self, r: &TxRecord) {
        let mut g = self.lock();
        let Inner { rngs, log, .. } = &mut *g;
        if let Some(l) = log {
            l.log(r, epoch_us(), &mut rngs.sample);
        }
    }

    /// Closes the log (writing the intervals complete by now); an error is kept for
    /// [`ThreadShared::take_log_error`].
    pub fn finish_log(&self) {
        let mut g = self.lock();
        let Inner {
            rngs,
            log,
            log_error,
            ..
        } = &mut *g;
        if let Some(l) = log.take()
            && let Err(e) = l.finish(epoch_us(), &mut rngs.sample)
        {
            *log_error = Some(format!("could not write the transaction log: {e}"));
        }
    }

    pub fn take_log_error(&self) -> Option<String> {
        self.lock().log_error.take()
    }
}
