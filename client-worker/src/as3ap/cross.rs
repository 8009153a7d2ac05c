//! OSDB's cross-section tests (`crossSectionTests`): while the users run a mix, one more
//! session runs a fixed list once, each statement timed: `sel_1_ncl` and
//! `agg_simple_report` from the single-user list, then AS3AP's multi-user tests on 100
//! rows of `updates`, once as a sequential key range (`_seq`) and once as 100 keys spread
//! over the table (`_rand`): select them, modify them in a transaction that is rolled
//! back (`mu_mod_100_seq_abort`), modify them for good (`mu_mod_100_rand`), and write the
//! values saved before the mix back (`mu_unmod_*`). After the mix the same session checks
//! (`mu_checkmod_*`) that every row of both sets holds its saved value again: the
//! rollback changed nothing and the undo restored everything. A check that finds fewer
//! than 100 fails the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio_postgres::Client;

use super::list::{self, Op, PROJ6};
use super::queries::run_op;
use super::schema;
use crate::conn::Target;
use crate::error::WorkerError;

/// What the modifications add to `col_double` (AS3AP's 10^8).
const SHIFT: &str = "100000000";

/// The two sets of 100 rows of `updates` the tests touch.
pub struct Keys {
    /// First key of the sequential range `lo..=lo+99`.
    pub lo: u64,
    /// 100 distinct existing keys, one in each hundredth of the table.
    pub spread: Vec<u64>,
}

impl Keys {
    /// For a table of `rows` rows (keys 0, 2..=rows; at least 1000 rows).
    pub fn for_rows(rows: u64) -> Keys {
        let step = (rows - 2) / 100;
        Keys {
            lo: rows / 4,
            spread: (0..100).map(|j| 2 + j * step + step / 2).collect(),
        }
    }

    fn seq(&self) -> String {
        format!("col_key between {} and {}", self.lo, self.lo + 99)
    }

    fn rand(&self) -> String {
        let keys: Vec<String> = self.spread.iter().map(u64::to_string).collect();
        format!("col_key in ({})", keys.join(", "))
    }
}

/// One timed statement of the cross section.
#[derive(Clone, Debug, PartialEq)]
pub struct Timed {
    pub name: &'static str,
    pub seconds: f64,
    /// Rows returned or affected (for a check: rows found restored).
    pub rows: u64,
}

/// The timed tests and, after the mix, the checks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CrossOutcome {
    pub tests: Vec<Timed>,
    pub checks: Vec<Timed>,
}

impl CrossOutcome {
    /// The seconds of the timed tests (OSDB's `crossSectionTests(...)` line).
    pub fn total_s(&self) -> f64 {
        self.tests.iter().map(|t| t.seconds).sum()
    }
}

fn tests(k: &Keys) -> Vec<(&'static str, Op)> {
    let (seq, rand) = (k.seq(), k.rand());
    let shift = |w: &str| format!("update updates set col_double = col_double + {SHIFT} where {w}");
    let restore = |w: &str| {
        format!(
            "update updates u set col_double = s.col_double from xs_saved s where u.col_key = s.col_key and u.{w}"
        )
    };
    vec![
        ("sel_1_ncl", Op::Select(list::sel_1_ncl())),
        (
            "agg_simple_report",
            Op::Select(list::AGG_SIMPLE_REPORT.into()),
        ),
        (
            "mu_sel_100_seq",
            Op::Select(format!("{PROJ6} from updates where {seq}")),
        ),
        (
            "mu_sel_100_rand",
            Op::Select(format!("{PROJ6} from updates where {rand}")),
        ),
        (
            "mu_mod_100_seq_abort",
            Op::Steps(vec![
                Op::Ddl("begin".into()),
                Op::Dml(shift(&seq)),
                Op::Ddl("rollback".into()),
            ]),
        ),
        ("mu_mod_100_rand", Op::Dml(shift(&rand))),
        ("mu_unmod_100_seq", Op::Dml(restore(&seq))),
        ("mu_unmod_100_rand", Op::Dml(restore(&rand))),
    ]
}

fn checks(k: &Keys) -> [(&'static str, String); 2] {
    let check = |w: &str| {
        format!(
            "select count(*) from updates u join xs_saved s on u.col_key = s.col_key where u.{w} and u.col_double = s.col_double"
        )
    };
    [
        ("mu_checkmod_100_seq", check(&k.seq())),
        ("mu_checkmod_100_rand", check(&k.rand())),
    ]
}

/// The cross-section session.
pub struct Session {
    client: Client,
    conn: tokio::task::JoinHandle<()>,
    keys: Keys,
}

impl Session {
    /// Connects and saves the two sets' `col_double` in a temporary table (not timed).
    pub async fn open(target: &Target, rows: u64) -> Result<Session, WorkerError> {
        let (client, conn) = target.connect().await?;
        let keys = Keys::for_rows(rows);
        schema::exec(
            &client,
            &format!(
                "create temporary table xs_saved as select col_key, col_double from updates where {} or {}",
                keys.seq(),
                keys.rand()
            ),
        )
        .await?;
        Ok(Session { client, conn, keys })
    }

    /// Runs the tests in order, once each; stops early (with what is done) when `stop`.
    pub async fn run(&self, stop: &AtomicBool) -> Result<Vec<Timed>, WorkerError> {
        let mut out = Vec::new();
        for (name, op) in tests(&self.keys) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let started = Instant::now();
            let (rows, _, _) = run_op(&self.client, &op)
                .await
                .map_err(|e| named(name, e))?;
            let seconds = started.elapsed().as_secs_f64();
            tracing::debug!(query = name, rows, seconds, "as3ap cross-section test done");
            out.push(Timed {
                name,
                seconds,
                rows,
            });
        }
        Ok(out)
    }

    /// The checks after the mix; fewer than 100 restored rows in a set fails.
    pub async fn check(self) -> Result<Vec<Timed>, WorkerError> {
        let mut out = Vec::new();
        for (name, sql) in checks(&self.keys) {
            let started = Instant::now();
            let n: i64 = self
                .client
                .query_one(sql.as_str(), &[])
                .await
                .map_err(|e| named(name, WorkerError::sql(format!("\"{sql}\" failed"), &e)))?
                .get(0);
            let seconds = started.elapsed().as_secs_f64();
            if n != 100 {
                return Err(WorkerError::Run(format!(
                    "as3ap cross-section check {name} found {n} of 100 rows of updates holding their value from before the mix"
                )));
            }
            out.push(Timed {
                name,
                seconds,
                rows: n as u64,
            });
        }
        drop(self.client);
        let _ = self.conn.await;
        Ok(out)
    }
}

fn named(name: &str, e: WorkerError) -> WorkerError {
    match e {
        WorkerError::Sql { context, reason } => WorkerError::Sql {
            context: format!("cross-section {name}: {context}"),
            reason,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sets_hold_100_existing_distinct_keys() {
        for rows in [1000, 1001, 100_000, 100_000_000] {
            let k = Keys::for_rows(rows);
            let mut s = k.spread.clone();
            s.dedup();
            assert_eq!(s.len(), 100, "{rows}");
            assert!(s.iter().all(|&x| (2..=rows).contains(&x)), "{rows}");
            assert!(k.lo >= 2 && k.lo + 99 <= rows, "{rows}");
        }
    }

    #[test]
    fn the_tests_are_osdbs_in_order() {
        let names: Vec<&str> = tests(&Keys::for_rows(1000)).iter().map(|t| t.0).collect();
        assert_eq!(
            names,
            [
                "sel_1_ncl",
                "agg_simple_report",
                "mu_sel_100_seq",
                "mu_sel_100_rand",
                "mu_mod_100_seq_abort",
                "mu_mod_100_rand",
                "mu_unmod_100_seq",
                "mu_unmod_100_rand"
            ]
        );
    }
}
