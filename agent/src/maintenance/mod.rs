//! Maintenance timings on a run's server: bulk load (COPY), CREATE INDEX, VACUUM ANALYZE,
//! CHECKPOINT, `count(*)` with a warm and a cold cache, dump and restore with the build's
//! own pg_dump / pg_restore. Each step is timed and reported as `maint.<step>` seconds.
//!
//! The data is a table shaped like pgbench_accounts (`maint_accounts`: aid, bid, abalance,
//! filler char(84)) of scale x 100000 rows in the database `blocklab_maint`. What each
//! timing covers:
//! - `copy`: CREATE TABLE and the COPY FROM STDIN of generated rows (streamed in chunks);
//!   the database is (re)created just before, untimed.
//! - `create-index`: the primary key on aid and a btree index on bid.
//! - `vacuum-analyze`: VACUUM ANALYZE of the whole database.
//! - `checkpoint`: CHECKPOINT.
//! - `count-warm`: the second of two `count(*)` of the table.
//! - `count-cold`: clean (fast) stop, OS page cache drop (when permitted), start with the
//!   same data directory, port and settings, then the first `count(*)` after the start.
//! - `dump`: `pg_dump -Fc` of the database into the run directory.
//! - `restore`: `pg_restore -j 1` of that dump into a fresh `blocklab_restore` (created
//!   just before, untimed); the restored row count is checked, then the database and the
//!   dump are removed.
//!
//! A step that needs data or a dump an earlier step of the task did not make gets them
//! untimed (and says so in a note). Besides the step timings the result carries
//! `maint.table_bytes` (pg_total_relation_size after the load) and `maint.dump_bytes`;
//! the coordinator adds `maint.total_s` (the sum of the metrics in seconds), so the agent
//! must not report it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_proto::{RunMaintenanceResult, RunMaintenanceTask, WorkloadMetric};

use super::{AgentHandler, STAGE_MAINTENANCE};
use crate::cluster::{self, Cluster};
use crate::conf::DB_USER;
use crate::error::AgentError;
use crate::process::log_tail;

#[path = "maintenance_sql.rs"]
mod sql;
#[path = "maintenance_tools.rs"]
mod tools;
use sql::{connect, guarded, pg};

/// The steps, in the order an empty step list runs them.
pub const STEPS: [&str; 8] = blocklab_spec::MAINTENANCE_STEPS;
pub const MAINT_DB: &str = "blocklab_maint";
pub const RESTORE_DB: &str = "blocklab_restore";
const TABLE: &str = "maint_accounts";
const ROWS_PER_SCALE: u64 = 100_000;
const MAX_SCALE: u32 = 10_000;
const DUMP_FILE: &str = "maint.dump";
const PASS_FILE: &str = "maint.pgpass";

/// The steps to run, in order: the task's (checked: known names, no repeats) or all.
pub fn plan(task: &RunMaintenanceTask) -> Result<Vec<&'static str>, AgentError> {
    if !(1..=MAX_SCALE).contains(&task.scale) {
        return Err(AgentError::invalid(
            "scale",
            format!("{} is not in 1..={MAX_SCALE}", task.scale),
        ));
    }
    if task.steps.is_empty() {
        return Ok(STEPS.to_vec());
    }
    let mut out: Vec<&'static str> = Vec::with_capacity(task.steps.len());
    for s in &task.steps {
        let known = STEPS.iter().find(|k| **k == s.as_str()).ok_or_else(|| {
            AgentError::invalid(
                "steps",
                format!("unknown step {s:?}; allowed: {}", STEPS.join(", ")),
            )
        })?;
        if out.contains(known) {
            return Err(AgentError::invalid(
                "steps",
                format!("step {s:?} is listed more than once"),
            ));
        }
        out.push(known);
    }
    Ok(out)
}

/// How long one step may take: generous, growing with the data.
fn step_limit(scale: u32) -> Duration {
    Duration::from_secs(600 + 6 * u64::from(scale))
}

impl AgentHandler {
    /// Runs the task's steps in order on the run's cluster (task `RunMaintenance`).
    pub async fn run_maintenance(
        &self,
        run_id: &str,
        task: &RunMaintenanceTask,
        progress: &ProgressSink,
    ) -> Result<RunMaintenanceResult, AgentError> {
        let steps = plan(task)?;
        let c = self.cluster_of(run_id)?;
        if !cluster::is_running(&c) {
            return Err(crate::stats::server_gone(&c));
        }
        let mut m = Maint {
            handler: self,
            run_id,
            limit: step_limit(task.scale),
            rows: u64::from(task.scale) * ROWS_PER_SCALE,
            c,
            client: None,
            loaded: false,
            dump: None,
            result: RunMaintenanceResult::default(),
        };
        let mut outcome = Ok(());
        for step in steps {
            progress.stage(STAGE_MAINTENANCE, step).await;
            tracing::info!(run_id, step, "maintenance step");
            if let Err(e) = m.step(step).await {
                outcome = Err(m.step_error(step, e));
                break;
            }
        }
        outcome?;
        Ok(std::mem::take(&mut m.result))
    }
}

/// The dump and the passfile go also when the task is cancelled mid-step.
impl Drop for Maint<'_> {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// One maintenance task in progress.
struct Maint<'a> {
    handler: &'a AgentHandler,
    run_id: &'a str,
    /// The run's cluster (its pid follows a restart).
    c: Cluster,
    limit: Duration,
    rows: u64,
    /// A session in the maintenance database, opened on first use.
    client: Option<tokio_postgres::Client>,
    /// Whether this task loaded the table.
    loaded: bool,
    /// The dump this task made (removed after the restore and at the end).
    dump: Option<PathBuf>,
    result: RunMaintenanceResult,
}

impl Maint<'_> {
    async fn step(&mut self, step: &'static str) -> Result<(), AgentError> {
        if step != "copy" && !self.loaded {
            self.note(format!("{step}: the table was loaded untimed first"));
            self.load().await?;
        }
        let secs = match step {
            "copy" => self.load().await?,
            "create-index" => {
                let stmts = [
                    format!("ALTER TABLE {TABLE} ADD PRIMARY KEY (aid)"),
                    format!("CREATE INDEX {TABLE}_bid_idx ON {TABLE} (bid)"),
                ];
                self.timed_sql(&stmts).await?
            }
            "vacuum-analyze" => self.timed_sql(&["VACUUM ANALYZE".to_string()]).await?,
            "checkpoint" => self.timed_sql(&["CHECKPOINT".to_string()]).await?,
            "count-warm" => {
                self.count().await?;
                self.count().await?
            }
            "count-cold" => {
                let dropped = self.restart().await?;
                self.result.os_cache_dropped = dropped;
                self.note(if dropped {
                    "count-cold: server stopped, OS page cache dropped, server started".into()
                } else {
                    "count-cold: the OS page cache could not be dropped (not permitted); \
                     only PostgreSQL's buffers were cold"
                        .to_string()
                });
                let limit = self.limit;
                let client = self.client().await?;
                let started: String = guarded(client, limit, "read postmaster start", async {
                    let r = client
                        .query_one("SELECT pg_postmaster_start_time()::text", &[])
                        .await
                        .map_err(pg("read pg_postmaster_start_time()"))?;
                    r.try_get(0).map_err(pg("read pg_postmaster_start_time()"))
                })
                .await?;
                let pid = self.c.pid;
                self.note(format!(
                    "count-cold: postmaster restarted (pid {pid}, started at {started})"
                ));
                self.count().await?
            }
            "dump" => {
                let (secs, bytes) = self.dump().await?;
                self.metric("maint.dump_bytes", bytes as f64, "bytes");
                secs
            }
            "restore" => self.restore().await?,
            other => return Err(AgentError::invalid("steps", format!("unknown {other:?}"))),
        };
        self.metric(&format!("maint.{}", step.replace('-', "_")), secs, "s");
        Ok(())
    }

    fn metric(&mut self, name: &str, value: f64, unit: &str) {
        self.result.metrics.push(WorkloadMetric {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
            higher_is_better: false,
        });
    }

    fn note(&mut self, text: String) {
        tracing::info!(run_id = self.run_id, "{text}");
        self.result.notes.push(text);
    }

    fn server_log(&self) -> PathBuf {
        self.c.run_dir.join("postgres.log")
    }

    /// The maintenance database session, (re)connecting when there is none.
    async fn client(&mut self) -> Result<&tokio_postgres::Client, AgentError> {
        if self.client.is_none() {
            self.client = Some(connect(&self.c, MAINT_DB).await?);
        }
        Ok(self.client.as_ref().expect("just connected"))
    }

    /// (Re)creates `db` through a session in `postgres`.
    async fn recreate_db(&mut self, db: &str) -> Result<(), AgentError> {
        let admin = connect(&self.c, "postgres").await?;
        let stmts = format!("DROP DATABASE IF EXISTS {db}");
        guarded(&admin, self.limit, "drop database", async {
            admin.batch_execute(&stmts).await.map_err(pg(&stmts))
        })
        .await?;
        let stmts = format!("CREATE DATABASE {db} OWNER {DB_USER}");
        guarded(&admin, self.limit, "create database", async {
            admin.batch_execute(&stmts).await.map_err(pg(&stmts))
        })
        .await
    }

    /// Recreates the database, creates the table and COPYs the rows in; returns the seconds
    /// of CREATE TABLE + COPY.
    async fn load(&mut self) -> Result<f64, AgentError> {
        self.client = None;
        self.recreate_db(MAINT_DB).await?;
        let (limit, rows) = (self.limit, self.rows);
        let client = self.client().await?;
        let started = Instant::now();
        guarded(
            client,
            limit,
            "load the table",
            sql::load(client, TABLE, rows),
        )
        .await?;
        let secs = started.elapsed().as_secs_f64();
        let bytes: i64 = guarded(client, limit, "table size", async {
            let q = format!("SELECT pg_total_relation_size('{TABLE}')");
            let r = client.query_one(&q, &[]).await.map_err(pg("table size"))?;
            r.try_get(0).map_err(pg("table size"))
        })
        .await?;
        self.loaded = true;
        self.metric("maint.table_bytes", bytes as f64, "bytes");
        Ok(secs)
    }

    /// Runs the statements one after another in the maintenance database; their seconds.
    async fn timed_sql(&mut self, stmts: &[String]) -> Result<f64, AgentError> {
        let limit = self.limit;
        let client = self.client().await?;
        let started = Instant::now();
        for s in stmts {
            guarded(client, limit, s, async {
                client.batch_execute(s).await.map_err(pg(s))
            })
            .await?;
        }
        Ok(started.elapsed().as_secs_f64())
    }

    /// One `count(*)` of the table, checked against the rows loaded; its seconds.
    async fn count(&mut self) -> Result<f64, AgentError> {
        let (limit, rows) = (self.limit, self.rows);
        let client = self.client().await?;
        let started = Instant::now();
        let n = sql::count(client, limit, TABLE).await?;
        let secs = started.elapsed().as_secs_f64();
        if n != rows {
            return Err(AgentError::Other(format!(
                "count(*) of {TABLE} returned {n} rows, expected {rows}"
            )));
        }
        Ok(secs)
    }

    /// Removes what the task leaves in the run directory (dump, passfile).
    fn cleanup(&mut self) {
        self.client = None;
        self.remove_dump();
        let _ = std::fs::remove_file(self.c.run_dir.join(DUMP_FILE));
        let _ = std::fs::remove_file(self.c.run_dir.join(PASS_FILE));
    }

    /// The step's error: names the step and carries the server log's tail (plus the tool's
    /// log for pg_dump / pg_restore / pg_ctl); a postmaster that died is said so.
    fn step_error(&self, step: &str, e: AgentError) -> AgentError {
        if matches!(e, AgentError::UnknownRun(_) | AgentError::Invalid { .. }) {
            return e;
        }
        let server_log = log_tail(&[&self.server_log()]);
        let prefix = format!("maintenance step {step}");
        match e {
            // A tool's own log first (pg_dump, pg_restore, pg_ctl), then the server's.
            AgentError::Process {
                what,
                reason,
                log_tail,
            } => {
                let extra = if server_log.is_empty() {
                    String::new()
                } else {
                    format!("==> postgres.log <==\n{server_log}")
                };
                AgentError::Process {
                    what: format!("{prefix}: {what}"),
                    reason,
                    log_tail,
                }
                .with_extra_log(extra)
            }
            e if !cluster::is_running(&self.c) => AgentError::Postgres {
                context: prefix,
                reason: format!(
                    "postgres is not running (postmaster pid {} gone): {e}",
                    self.c.pid
                ),
                log_tail: server_log,
            },
            AgentError::Postgres {
                context,
                reason,
                log_tail,
            } => AgentError::Postgres {
                context: format!("{prefix}: {context}"),
                reason,
                log_tail,
            }
            .with_extra_log(server_log),
            other => AgentError::Postgres {
                context: prefix,
                reason: other.to_string(),
                log_tail: server_log,
            },
        }
    }
}
