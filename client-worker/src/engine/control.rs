//! How a load is steered: the control shared with whoever may stop it, the timeline every
//! client thread gets once all are connected, and the run's seed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio::sync::Notify;

/// When clients start and stop; sent to every thread once all are connected.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timeline {
    pub start: Instant,
    pub window_start: Instant,
    /// None: run until each client did its transactions.
    pub end: Option<Instant>,
    pub window_seconds: usize,
}

/// How a running load is steered from outside: stopped early, or started by a go.
#[derive(Clone, Default)]
pub struct LoadControl {
    pub stop: Arc<AtomicBool>,
    /// Woken when `stop` is set, so a wait for the go ends too.
    pub stopped: Arc<Notify>,
}

impl LoadControl {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.stopped.notify_waiters();
        self.stopped.notify_one();
    }
}

/// The seed pgbench would use for `--random-seed` (`time` when unset).
pub fn effective_seed(seed: Option<u64>) -> u64 {
    seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_micros() as u64)
    })
}
