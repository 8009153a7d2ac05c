//! Runs a checked maintenance plan on a run's cluster: one step after another, each timed,
//! with the step's error naming it and carrying the logs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_spec::Stage;

use super::plan::{
    BID_INDEX, DUMP_FILE, MAINT_DB, MaintPlan, MaintReport, Metric, PASS_FILE, RESTORE_DB, Step,
    TABLE,
};
use super::sql::{self, connect, guarded, pg};
use super::tools;
use crate::cluster::{self, Cluster, ResetPlan};
use crate::conf::DB_USER;
use crate::error::AgentError;
use crate::process::log_tail;

/// Called after the `count-cold` restart with the cluster's new pid: records it for the run
/// and says whether the run is still registered (if not, the server is stopped again and
/// the task fails with `UnknownRun`).
pub type OnRestart<'a> = &'a (dyn Fn(&Cluster) -> bool + Sync);

/// Runs the plan's steps in order on the run's cluster `c`.
pub async fn run(
    c: Cluster,
    plan: &MaintPlan,
    progress: &ProgressSink,
    on_restart: OnRestart<'_>,
) -> Result<MaintReport, AgentError> {
    if !cluster::is_running(&c) {
        return Err(crate::stats::server_gone(&c));
    }
    let run_id = c.run_id.clone();
    let mut m = Maint {
        on_restart,
        limit: plan.step_limit(),
        rows: plan.rows(),
        reset: plan.reset(),
        c,
        client: None,
        loaded: false,
        dump: None,
        result: MaintReport::default(),
    };
    for &step in plan.steps() {
        progress.stage(Stage::Maintenance, step.as_str()).await;
        tracing::info!(run_id = %run_id, step = step.as_str(), "maintenance step");
        if let Err(e) = m.step(step).await {
            return Err(m.step_error(step, e));
        }
    }
    Ok(std::mem::take(&mut m.result))
}

/// The dump and the passfile go also when the task is cancelled mid-step.
impl Drop for Maint<'_> {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// One maintenance task in progress.
struct Maint<'a> {
    on_restart: OnRestart<'a>,
    /// The run's cluster (its pid follows a restart).
    c: Cluster,
    limit: Duration,
    rows: u64,
    /// The cache reset due once the table is loaded.
    reset: ResetPlan,
    /// A session in the maintenance database, opened on first use.
    client: Option<tokio_postgres::Client>,
    /// Whether this task loaded the table.
    loaded: bool,
    /// The dump this task made (removed after the restore and at the end).
    dump: Option<PathBuf>,
    result: MaintReport,
}

impl Maint<'_> {
    async fn step(&mut self, step: Step) -> Result<(), AgentError> {
        if step != Step::Copy && !self.loaded {
            self.note(format!("{step}: the table was loaded untimed first"));
            self.load().await?;
            self.reset_if_due().await?;
        }
        let secs = match step {
            Step::Copy => self.load().await?,
            Step::CreateIndex => {
                let stmts = [
                    format!("ALTER TABLE {TABLE} ADD PRIMARY KEY (aid)"),
                    format!("CREATE INDEX {BID_INDEX} ON {TABLE} (bid)"),
                ];
                self.timed_sql(&stmts).await?
            }
            Step::VacuumAnalyze => self.timed_sql(&["VACUUM ANALYZE".to_string()]).await?,
            Step::Checkpoint => self.timed_sql(&["CHECKPOINT".to_string()]).await?,
            Step::CountWarm => {
                self.count().await?;
                self.count().await?
            }
            Step::CountCold => {
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
            Step::Dump => {
                let (secs, bytes) = self.dump().await?;
                self.metric("maint.dump_bytes", bytes as f64, "bytes");
                secs
            }
            Step::Restore => self.restore().await?,
        };
        self.metric(&step.metric(), secs, "s");
        self.reset_if_due().await
    }

    /// The reset after the load (once, untimed), before the next step.
    async fn reset_if_due(&mut self) -> Result<(), AgentError> {
        if !self.loaded || self.reset.is_noop() || self.result.reset.is_some() {
            return Ok(());
        }
        self.client = None;
        let plan = self.reset;
        let done = cluster::reset(&mut self.c, plan, self.limit).await?;
        if plan.restart_server && !(self.on_restart)(&self.c) {
            tools::stop_immediately(&self.c).await;
            return Err(AgentError::UnknownRun(self.c.run_id.clone()));
        }
        self.note(format!(
            "caches reset after the load: server restarted {}, OS page cache dropped {}{}",
            done.server_restarted,
            done.os_cache.dropped(),
            match done.os_cache.reason() {
                "" => String::new(),
                r => format!(" ({r})"),
            }
        ));
        self.result.reset = Some(done);
        Ok(())
    }

    fn metric(&mut self, name: &str, value: f64, unit: &str) {
        self.result.metrics.push(Metric {
            name: name.to_string(),
            value,
            unit: unit.to_string(),
        });
    }

    fn note(&mut self, text: String) {
        tracing::info!(run_id = %self.c.run_id, "{text}");
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

    /// The `count-cold` restart; the run's registration follows the new pid. Whether the
    /// OS page cache could be dropped.
    async fn restart(&mut self) -> Result<bool, AgentError> {
        self.client = None;
        let dropped = cluster::restart(&mut self.c, self.limit, true)
            .await?
            .dropped();
        if !(self.on_restart)(&self.c) {
            // The run was stopped meanwhile: do not leave a server behind.
            tools::stop_immediately(&self.c).await;
            return Err(AgentError::UnknownRun(self.c.run_id.clone()));
        }
        Ok(dropped)
    }

    /// `pg_dump` of the maintenance database: seconds, bytes.
    async fn dump(&mut self) -> Result<(f64, u64), AgentError> {
        self.client = None;
        let d = tools::dump(&self.c, self.limit).await?;
        self.dump = Some(d.path);
        Ok((d.seconds, d.bytes))
    }

    /// `pg_restore -j 1` of the dump into a fresh database; checks the rows, then drops the
    /// database and removes the dump. The seconds of pg_restore.
    async fn restore(&mut self) -> Result<f64, AgentError> {
        let dump = match self.dump.clone() {
            Some(d) => d,
            None => {
                self.note("restore: the dump was made untimed first".into());
                self.dump().await?;
                self.dump.clone().expect("dump made")
            }
        };
        self.recreate_db(RESTORE_DB).await?;
        let secs = tools::restore(&self.c, self.limit, &dump).await?;
        {
            let restored = connect(&self.c, RESTORE_DB).await?;
            let n = sql::count(&restored, self.limit, TABLE).await?;
            if n != self.rows {
                return Err(AgentError::Other(format!(
                    "the restored {TABLE} has {n} rows, expected {}",
                    self.rows
                )));
            }
            self.note(format!(
                "restore: restored row count {n} matches the {} rows loaded",
                self.rows
            ));
        }
        let admin = connect(&self.c, "postgres").await?;
        let drop_db = format!("DROP DATABASE {RESTORE_DB}");
        guarded(&admin, self.limit, &drop_db, async {
            admin.batch_execute(&drop_db).await.map_err(pg(&drop_db))
        })
        .await?;
        self.remove_dump();
        Ok(secs)
    }

    fn remove_dump(&mut self) {
        if let Some(d) = self.dump.take()
            && let Err(e) = std::fs::remove_file(&d)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %d.display(), error = %e, "could not remove the dump");
        }
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
    fn step_error(&self, step: Step, e: AgentError) -> AgentError {
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
