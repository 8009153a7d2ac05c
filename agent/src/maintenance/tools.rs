//! The maintenance steps that go outside SQL: the clean restart for the cold `count(*)`, and
//! dump and restore with the build's own pg_dump and pg_restore.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::sql::{self, connect, guarded, pg};
use super::{DUMP_FILE, MAINT_DB, Maint, PASS_FILE, RESTORE_DB, TABLE};
use crate::cluster;
use crate::conf::DB_USER;
use crate::error::AgentError;
use crate::process::Cmd;

impl Maint<'_> {
    /// Clean stop, OS page cache drop, start with the same directory, port and settings;
    /// the run's registered cluster gets the new postmaster's pid. Whether the cache drop
    /// was permitted.
    pub(super) async fn restart(&mut self) -> Result<bool, AgentError> {
        self.client = None;
        let pg_ctl_log = self.c.run_dir.join("pg_ctl.log");
        let mut stop = cluster::pg_ctl(&self.c)
            .args(["-m", "fast", "-w", "-t"])
            .arg(self.limit.as_secs().to_string())
            .arg("stop");
        stop.what = "pg_ctl stop".into();
        stop.timeout = self.limit + Duration::from_secs(30);
        stop.run_logged(&pg_ctl_log).await?;
        let dropped = crate::handler::drop_os_cache().await;
        cluster::start(&self.c).await?;
        let pid = cluster::postmaster_pid(&self.c.data_dir).ok_or_else(|| {
            AgentError::Other("postgres started but postmaster.pid names no live postmaster".into())
        })?;
        self.c.pid = pid;
        let registered = {
            let mut st = self.handler.lock();
            match st.clusters.get_mut(self.run_id) {
                Some(reg) if reg.data_dir == self.c.data_dir => {
                    reg.pid = pid;
                    true
                }
                _ => false,
            }
        };
        if !registered {
            // The run was stopped meanwhile: do not leave a server behind.
            let _ = cluster::pg_ctl(&self.c)
                .args(["-m", "immediate", "-w", "-t", "60", "stop"])
                .run_logged(&pg_ctl_log)
                .await;
            return Err(AgentError::UnknownRun(self.run_id.to_string()));
        }
        Ok(dropped)
    }

    /// The passfile the pg tools authenticate with (the pg user's, mode 0600).
    pub(super) fn passfile(&self) -> Result<PathBuf, AgentError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.c.run_dir.join(PASS_FILE);
        let _ = std::fs::remove_file(&path);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| AgentError::io(format!("create {}", path.display()), e))?;
        f.write_all(format!("*:*:*:{DB_USER}:{}\n", self.c.password).as_bytes())
            .map_err(|e| AgentError::io(format!("write {}", path.display()), e))?;
        crate::users::chown_to(&path, &self.c.run_as)?;
        Ok(path)
    }

    /// The build's own `tool` connecting to the run's server as the run's role, run as
    /// the pg user in the run directory.
    pub(super) fn pg_tool(&self, tool: &str, passfile: &Path) -> Cmd {
        let dir = &self.c.run_dir;
        Cmd::new(tool, self.c.install.join("bin").join(tool), self.limit)
            .cwd(dir)
            .env("HOME", &dir.to_string_lossy())
            .env("PGPASSFILE", &passfile.to_string_lossy())
            .env("PGCONNECT_TIMEOUT", "10")
            .run_as(Some(&self.c.run_as))
            .args(["-h", &self.c.listen.to_string()])
            .args(["-p", &self.c.port.to_string()])
            .args(["-U", DB_USER, "-w"])
    }

    /// `pg_dump -Fc` of the maintenance database into the run directory: seconds, bytes.
    pub(super) async fn dump(&mut self) -> Result<(f64, u64), AgentError> {
        self.client = None;
        let path = self.c.run_dir.join(DUMP_FILE);
        let _ = std::fs::remove_file(&path);
        let passfile = self.passfile()?;
        let cmd = self
            .pg_tool("pg_dump", &passfile)
            .args(["-Fc", "-f"])
            .arg(&path)
            .arg(MAINT_DB);
        let started = Instant::now();
        cmd.run_logged(&self.c.run_dir.join("maint-pg_dump.log"))
            .await?;
        let secs = started.elapsed().as_secs_f64();
        self.dump = Some(path.clone());
        let bytes = std::fs::metadata(&path)
            .map_err(|e| AgentError::io(format!("stat {}", path.display()), e))?
            .len();
        Ok((secs, bytes))
    }

    /// `pg_restore -j 1` of the dump into a fresh database; checks the rows, then drops the
    /// database and removes the dump. The seconds of pg_restore.
    pub(super) async fn restore(&mut self) -> Result<f64, AgentError> {
        let dump = match self.dump.clone() {
            Some(d) => d,
            None => {
                self.note("restore: the dump was made untimed first".into());
                self.dump().await?;
                self.dump.clone().expect("dump made")
            }
        };
        self.recreate_db(RESTORE_DB).await?;
        let passfile = self.passfile()?;
        let cmd = self
            .pg_tool("pg_restore", &passfile)
            .args(["-j", "1", "--exit-on-error", "-d", RESTORE_DB])
            .arg(&dump);
        let started = Instant::now();
        cmd.run_logged(&self.c.run_dir.join("maint-pg_restore.log"))
            .await?;
        let secs = started.elapsed().as_secs_f64();
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

    pub(super) fn remove_dump(&mut self) {
        if let Some(d) = self.dump.take()
            && let Err(e) = std::fs::remove_file(&d)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %d.display(), error = %e, "could not remove the dump");
        }
    }
}
