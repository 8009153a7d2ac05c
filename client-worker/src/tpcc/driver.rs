//! The terminals of a run: each with its own connection, home warehouse and district, the
//! standard mix dealt from a shuffled deck, optional keying and thinking times, and its
//! measurements of the window. A terminal is a task of its load thread's executor
//! ([`super::thread`]): it waits only on its own socket or, keying and thinking, on the
//! executor's timer, in steps short enough to notice cancellation.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::rand::Rng;
use super::txn::{Outcome, Terminal};
use crate::engine::executor::sleep_until;
use crate::engine::stats::{ClientStats, SecondAcc, SharedSeries};
use crate::error::WorkerError;

/// The five transaction types, in the order of [`NAMES`].
pub const KINDS: usize = 5;
pub const NAMES: [&str; KINDS] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];
/// Cards per type in a deck of 100: 45% New-Order, 43% Payment, 4% each of the rest.
const DECK: [u32; KINDS] = [45, 43, 4, 4, 4];
/// Keying times and mean think times in seconds (clause 5.2.5.7).
const KEYING_S: [f64; KINDS] = [18.0, 3.0, 2.0, 2.0, 2.0];
const THINK_S: [f64; KINDS] = [12.0, 12.0, 10.0, 5.0, 5.0];

/// When the run warms up, measures and ends.
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    pub window_start: Instant,
    pub end: Instant,
}

/// What every terminal of every load thread shares: the cancellation flag, the abort flag a
/// terminal raises when its connection breaks (and the run when a thread panics), the live
/// count of completed transactions, and the window's one per-second series (so memory
/// grows with the window once, not once per terminal or thread).
#[derive(Debug, Default)]
pub struct Shared {
    pub stop: Arc<AtomicBool>,
    pub abort: AtomicBool,
    pub live: AtomicU64,
    pub seconds: SharedSeries,
}

impl Shared {
    /// Shares with `window_seconds` seconds in its series.
    pub fn new(stop: Arc<AtomicBool>, window_seconds: usize) -> Shared {
        Shared {
            stop,
            seconds: SharedSeries::new(window_seconds),
            ..Shared::default()
        }
    }

    fn halted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.abort.load(Ordering::Relaxed)
    }

    /// The window's per-second series.
    pub fn series(&self) -> Vec<SecondAcc> {
        self.seconds.snapshot()
    }
}

/// Keying and thinking: off, or on with the times multiplied by a scale.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    pub keying_thinking: bool,
    pub time_scale: f64,
}

/// The measurements of a load thread's terminals (one set for all of them, whatever their
/// number) or, merged, of the worker's; the per-second series is [`Shared`]'s.
#[derive(Clone, Debug)]
pub struct TermStats {
    pub all: ClientStats,
    pub kinds: Vec<ClientStats>,
    pub rollbacks: [u64; KINDS],
    /// The first error, even outside the window (for "no transaction completed").
    pub first_error: Option<String>,
}

impl TermStats {
    pub fn new() -> TermStats {
        TermStats {
            all: ClientStats::new(1),
            kinds: (0..KINDS).map(|_| ClientStats::new(1)).collect(),
            rollbacks: [0; KINDS],
            first_error: None,
        }
    }

    /// The first error: a terminal's first one not retryable, else the first failure of
    /// the window.
    pub fn settle_first_error(&mut self) {
        if self.first_error.is_none() {
            self.first_error.clone_from(&self.all.first_error);
        }
    }

    pub fn merge(&mut self, o: &TermStats) {
        self.all.merge(&o.all);
        for (a, b) in self.kinds.iter_mut().zip(&o.kinds) {
            a.merge(b);
        }
        for (a, b) in self.rollbacks.iter_mut().zip(o.rollbacks) {
            *a += b;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&o.first_error);
        }
    }
}

/// A shuffled deck of 100 transaction cards, reshuffled when used up (as DBT-2 deals).
struct Deck {
    cards: Vec<usize>,
    next: usize,
}

impl Deck {
    fn new(rng: &mut Rng) -> Deck {
        let mut cards = Vec::with_capacity(100);
        for (kind, n) in DECK.iter().enumerate() {
            cards.extend(std::iter::repeat_n(kind, *n as usize));
        }
        let mut d = Deck { cards, next: 0 };
        d.shuffle(rng);
        d
    }

    fn shuffle(&mut self, rng: &mut Rng) {
        for i in (1..self.cards.len()).rev() {
            let j = rng.uniform(0, i as i64) as usize;
            self.cards.swap(i, j);
        }
        self.next = 0;
    }

    fn deal(&mut self, rng: &mut Rng) -> usize {
        if self.next >= self.cards.len() {
            self.shuffle(rng);
        }
        self.next += 1;
        self.cards[self.next - 1]
    }
}

/// Sleeps `secs` seconds in short steps, so cancellation is noticed; false when the run
/// ends (window over, stopped or aborted) before the pause does.
async fn pause(secs: f64, end: Instant, shared: &Shared) -> bool {
    let until = Instant::now() + Duration::from_secs_f64(secs.max(0.0));
    loop {
        if shared.halted() {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return false;
        }
        if now >= until {
            return true;
        }
        let step = until.min(end).min(now + Duration::from_millis(100));
        sleep_until(step).await;
    }
}

/// Runs terminal `id` until the window ends, recording into its thread's `stats`; an error
/// only when its connection breaks.
pub async fn terminal(
    id: u32,
    mut t: Terminal,
    tl: Timeline,
    shared: &Shared,
    pace: Pace,
    stats: &RefCell<TermStats>,
) -> Result<(), WorkerError> {
    let mut deck = Deck::new(&mut t.rng);
    loop {
        if shared.halted() || Instant::now() >= tl.end {
            break;
        }
        let kind = deck.deal(&mut t.rng);
        if pace.keying_thinking && !pause(KEYING_S[kind] * pace.time_scale, tl.end, shared).await {
            break;
        }
        let t0 = Instant::now();
        let res = match kind {
            0 => t.new_order().await,
            1 => t.payment().await,
            2 => t.order_status().await,
            3 => t.delivery().await,
            _ => t.stock_level().await,
        };
        let done = Instant::now();
        let in_window = done >= tl.window_start && done <= tl.end;
        let second = done.saturating_duration_since(tl.window_start).as_secs() as usize;
        match res {
            Ok(outcome) => {
                shared.live.fetch_add(1, Ordering::Relaxed);
                if in_window {
                    let latency = done - t0;
                    let mut stats = stats.borrow_mut();
                    stats.all.record(0, latency);
                    shared.seconds.record(second, Some(latency));
                    stats.kinds[kind].record(0, latency);
                    if outcome == Outcome::RolledBack {
                        stats.rollbacks[kind] += 1;
                    }
                }
            }
            Err(e) => {
                let msg = e.to_string();
                if e.is_connection() || t.is_broken() {
                    shared.abort.store(true, Ordering::Relaxed);
                    return Err(WorkerError::Run(format!(
                        "tpcc terminal {id}: connection lost during {}: {msg}",
                        NAMES[kind]
                    )));
                }
                // Leave the failed transaction; a failure here shows on the next statement.
                let _ = t.exec("rollback").await;
                let msg = format!("{}: {msg}", NAMES[kind]);
                let retryable = e.is_retryable();
                if !retryable {
                    tracing::debug!(terminal = id, error = %msg, "tpcc transaction failed");
                }
                let mut stats = stats.borrow_mut();
                if stats.first_error.is_none() && !retryable {
                    stats.first_error = Some(msg.clone());
                }
                if in_window {
                    stats.all.record_failure(0, || msg.clone());
                    shared.seconds.record(second, None);
                    stats.kinds[kind].record_failure(0, || msg);
                }
            }
        }
        if pace.keying_thinking {
            let think = t.rng.neg_exp(THINK_S[kind] * pace.time_scale);
            if !pause(think, tl.end, shared).await {
                break;
            }
        }
    }
    t.close().await;
    Ok(())
}
