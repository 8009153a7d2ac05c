//! The users of a multi-user mix on their load threads ([`crate::engine::spread`]): each
//! thread connects its users (tasks of the thread's executor, over the executor's own
//! sockets), reports ready, waits for the start and runs them as tasks of the same executor,
//! every user repeatedly running the mix's query by a random existing key of `updates`. A
//! thread keeps one set of measurements for all its users; the per-second series and the
//! live count are the run's. The wait for the start blocks the thread outside the executor.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use blocklab_script::Protocol;
use blocklab_script::prng::PgPrng;

use super::mix::Mix;
use crate::conn::Target;
use crate::engine::pgwire::query::{self, Rows};
use crate::engine::pgwire::request::Template;
use crate::engine::pgwire::startup::connect_polled;
use crate::engine::pgwire::{Conn, SqlError};
use crate::engine::spread::Handshake;
use crate::engine::stats::{ClientStats, SharedSeries};
use crate::error::WorkerError;

/// What every load thread of a mix shares: how to connect and what to run, the
/// cancellation flag, the flag that halts the users when a thread panicked or the run was
/// dropped, the live count of queries, and the window's one per-second series.
pub(super) struct Setup {
    pub target: Target,
    pub mix: Mix,
    pub proto: Protocol,
    pub rows: u64,
    pub stop: Arc<AtomicBool>,
    pub halt: AtomicBool,
    pub live: AtomicU64,
    pub series: SharedSeries,
}

impl Setup {
    fn halted(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.halt.load(Ordering::Relaxed)
    }
}

/// The measured window: queries that start from `start` on are counted, none start after
/// `end`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub start: Instant,
    pub end: Instant,
}

/// What a thread's users measured.
pub(super) struct ThreadOutcome {
    pub stats: ClientStats,
    pub tuples: u64,
    /// When the last counted query ended (None: none did).
    pub finished: Option<Instant>,
    /// The thread's executor failed.
    pub error: Option<WorkerError>,
}

impl ThreadOutcome {
    fn empty() -> ThreadOutcome {
        ThreadOutcome {
            stats: ClientStats::new(1),
            tuples: 0,
            finished: None,
            error: None,
        }
    }
}

/// One user's connection (the load engine's own, `engine::pgwire`), the query's frames
/// under the extended and prepared protocols, and its random stream.
struct User {
    conn: Conn,
    template: Option<Template>,
    rows: Rows,
    scratch: String,
    rng: PgPrng,
}

/// A random existing key of `updates`: 0, 2, 3, ..., rows (OSDB: "there IS no key 1").
fn random_key(rng: &mut PgPrng, rows: u64) -> i32 {
    let k = rng.u64_range(0, rows - 1);
    let k = if k == 1 { rows } else { k };
    i32::try_from(k).unwrap_or(i32::MAX)
}

async fn one(mix: Mix, u: &mut User, rows: u64) -> Result<u64, SqlError> {
    let key = random_key(&mut u.rng, rows);
    match &u.template {
        None => {
            let sql = format!("{}{key}", mix.sql());
            query::simple_rows(&mut u.conn, &sql, &mut u.rows).await?;
        }
        Some(t) => query::query(&mut u.conn, t, &[&key], &mut u.scratch, &mut u.rows).await?,
    }
    Ok(match mix {
        Mix::Ir => u.rows.len() as u64,
        Mix::Oltp => u.rows.affected(),
    })
}

/// Runs one user until the window ends or the run stops, recording into `acc`, the
/// thread's measurements.
async fn drive(s: &Setup, span: Span, mut u: User, acc: &RefCell<ThreadOutcome>) {
    while !s.halted() && Instant::now() < span.end {
        let t0 = Instant::now();
        let res = one(s.mix, &mut u, s.rows).await;
        let t1 = Instant::now();
        let counted = t0 >= span.start;
        let second = t1.saturating_duration_since(span.start).as_secs() as usize;
        match res {
            Ok(n) if counted => {
                let mut acc = acc.borrow_mut();
                acc.stats.record(0, t1 - t0);
                s.series.record(second, Some(t1 - t0));
                acc.tuples += n;
                s.live.fetch_add(1, Ordering::Relaxed);
                acc.finished = acc.finished.max(Some(t1));
            }
            Ok(_) => {}
            Err(e) => {
                if counted {
                    let mut acc = acc.borrow_mut();
                    acc.stats.record_failure(0, || e.to_string());
                    s.series.record(second, None);
                    acc.finished = acc.finished.max(Some(t1));
                }
                if u.conn.is_broken() {
                    tracing::warn!(error = %e, "as3ap user lost its connection");
                    break;
                }
            }
        }
    }
    u.conn.close().await;
}

/// Connects a user seeded with `seed` and prepares its query, from a task of the thread's
/// executor.
async fn connect(s: &Setup, seed: u64) -> Result<(User, Duration), WorkerError> {
    let started = Instant::now();
    let mut conn = connect_polled(&s.target)
        .await
        .map_err(|e| WorkerError::Connect {
            target: s.target.display.clone(),
            reason: e.to_string(),
        })?;
    let sql = format!("{}$1", s.mix.sql());
    let preparing = |e: SqlError| WorkerError::Sql {
        context: "preparing the as3ap query".into(),
        reason: e.to_string(),
    };
    let template = match s.proto {
        Protocol::Simple => None,
        Protocol::Extended => Some(Template::unnamed(&sql, 1).map_err(preparing)?),
        Protocol::Prepared => Some(
            query::prepare(&mut conn, "as3ap_mix", &sql)
                .await
                .map_err(preparing)?,
        ),
    };
    let user = User {
        conn,
        template,
        rows: Rows::default(),
        scratch: String::new(),
        rng: PgPrng::seed(seed),
    };
    Ok((user, started.elapsed()))
}

/// Runs the users seeded with `seeds` on this thread.
pub(super) fn run_thread(s: &Setup, seeds: Vec<u64>, mut hs: Handshake<Span>) -> ThreadOutcome {
    let Some((mut ex, users, span)) = hs
        .open(seeds.iter().map(|&seed| connect(s, seed)), |u: User| {
            u.conn.close()
        })
    else {
        return ThreadOutcome::empty();
    };
    // One set of measurements for all the thread's users.
    let acc = RefCell::new(ThreadOutcome::empty());
    let ran = ex.run(users.into_iter().map(|u| drive(s, span, u, &acc)));
    let mut outcome = acc.into_inner();
    if let Err(e) = ran {
        tracing::error!(error = %e, "as3ap load thread executor failed");
        s.halt.store(true, Ordering::Relaxed);
        outcome.error = Some(hs.executor_error(&e));
    }
    outcome
}
