//! One load thread of a run ([`crate::engine::spread`]): connects its terminals (each a task
//! of the thread's executor, over the executor's own sockets), reports ready, waits for the
//! start, runs its terminals as tasks of the same executor and keeps one set of
//! measurements for all of them. The wait for the start blocks the thread outside the
//! executor.

use std::cell::RefCell;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::driver::{Pace, Shared, TermStats, Timeline, terminal};
use super::params::DISTRICTS;
use super::rand::{NuConstants, Rng};
use super::txn::Terminal;
use crate::conn::Target;
use crate::engine::pgwire::startup::connect_polled;
use crate::engine::spread::Handshake;
use crate::error::WorkerError;

/// What every load thread of a run needs to connect and run its terminals.
pub(super) struct Setup {
    pub target: Target,
    pub warehouses: i32,
    pub seed: u64,
    pub c: NuConstants,
    /// The client id of the worker's first terminal.
    pub client_id_offset: u32,
    pub shared: Arc<Shared>,
    pub pace: Pace,
}

/// What a thread's terminals measured, and the first error that ends the run (a lost
/// connection, or the thread's executor failing).
pub(super) struct ThreadOutcome {
    pub stats: TermStats,
    pub error: Option<WorkerError>,
}

impl ThreadOutcome {
    fn empty() -> ThreadOutcome {
        ThreadOutcome {
            stats: TermStats::new(),
            error: None,
        }
    }
}

/// The seed of terminal `k`'s generator, from the run's seed.
fn terminal_seed(seed: u64, k: u32) -> u64 {
    let mut r = Rng::seed(seed ^ 0x7e41_0000_0000_0000);
    r.next_u64()
        .wrapping_add(u64::from(k).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Connects terminal `k` and prepares its statements, from a task of the thread's executor.
async fn connect_terminal(s: &Setup, k: u32) -> Result<(Terminal, Duration), WorkerError> {
    let t0 = Instant::now();
    let conn = connect_polled(&s.target)
        .await
        .map_err(|e| WorkerError::Connect {
            target: s.target.display.clone(),
            reason: e.to_string(),
        })?;
    let w = s.warehouses as u32;
    let home = (
        (k % w) as i32 + 1,
        ((k / w) % DISTRICTS as u32) as i32 + 1,
        s.warehouses,
    );
    let term = Terminal::prepare(conn, Rng::seed(terminal_seed(s.seed, k)), home, s.c)
        .await
        .map_err(|e| WorkerError::Sql {
            context: format!(
                "tpcc terminal {k}: preparing the statements (load the tpcc data first)"
            ),
            reason: e.to_string(),
        })?;
    Ok((term, t0.elapsed()))
}

/// Runs the terminals `part` (indexes into the worker's share) on this thread.
pub(super) fn run_thread(
    s: &Setup,
    part: Range<u32>,
    mut hs: Handshake<Timeline>,
) -> ThreadOutcome {
    let ids: Vec<u32> = part.map(|i| s.client_id_offset.wrapping_add(i)).collect();
    let Some((mut ex, terms, tl)) =
        hs.open(ids.iter().map(|&k| connect_terminal(s, k)), Terminal::close)
    else {
        return ThreadOutcome::empty();
    };
    // One set of measurements for all the thread's terminals.
    let stats = RefCell::new(TermStats::new());
    let ran = ex.run(
        terms
            .into_iter()
            .zip(&ids)
            .map(|(t, &id)| terminal(id, t, tl, &s.shared, s.pace, &stats)),
    );
    let error = match ran {
        Ok(ended) => ended.into_iter().find_map(Result::err),
        Err(e) => {
            tracing::error!(error = %e, "tpcc load thread executor failed");
            s.shared.abort.store(true, Ordering::Relaxed);
            Some(hs.executor_error(&e))
        }
    };
    let mut stats = stats.into_inner();
    stats.settle_first_error();
    ThreadOutcome { stats, error }
}
