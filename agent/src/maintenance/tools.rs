//! The maintenance steps that go outside SQL: the immediate stop of a server nobody tracks,
//! and dump and restore with the build's own pg_dump and pg_restore.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::plan::{DUMP_FILE, MAINT_DB, PASS_FILE, RESTORE_DB};
use crate::cluster::{self, Cluster};
use crate::conf::DB_USER;
use crate::error::AgentError;
use crate::process::Cmd;

/// Immediate stop of a server nobody tracks any more (errors ignored).
pub async fn stop_immediately(c: &Cluster) {
    let _ = cluster::pg_ctl(c)
        .args(["-m", "immediate", "-w", "-t", "60", "stop"])
        .run_logged(&pg_ctl_log(c))
        .await;
}

fn pg_ctl_log(c: &Cluster) -> PathBuf {
    c.run_dir.join("pg_ctl.log")
}

/// The passfile the pg tools authenticate with (the pg user's, mode 0600).
fn passfile(c: &Cluster) -> Result<PathBuf, AgentError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = c.run_dir.join(PASS_FILE);
    let _ = std::fs::remove_file(&path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| AgentError::io(format!("create {}", path.display()), e))?;
    f.write_all(format!("*:*:*:{DB_USER}:{}\n", c.password).as_bytes())
        .map_err(|e| AgentError::io(format!("write {}", path.display()), e))?;
    crate::users::chown_to(&path, &c.run_as)?;
    Ok(path)
}

/// The build's own `tool` connecting to the run's server as the run's role, run as the pg
/// user in the run directory.
fn pg_tool(c: &Cluster, limit: Duration, tool: &str, passfile: &Path) -> Cmd {
    let dir = &c.run_dir;
    Cmd::new(tool, c.install.join("bin").join(tool), limit)
        .cwd(dir)
        .env("HOME", &dir.to_string_lossy())
        .env("PGPASSFILE", &passfile.to_string_lossy())
        .env("PGCONNECT_TIMEOUT", "10")
        .run_as(Some(&c.run_as))
        .args(["-h", &c.listen.to_string()])
        .args(["-p", &c.port.to_string()])
        .args(["-U", DB_USER, "-w"])
}

/// A dump `pg_dump` wrote.
pub struct Dump {
    pub path: PathBuf,
    pub seconds: f64,
    pub bytes: u64,
}

/// `pg_dump -Fc` of the maintenance database into the run directory.
pub async fn dump(c: &Cluster, limit: Duration) -> Result<Dump, AgentError> {
    let path = c.run_dir.join(DUMP_FILE);
    let _ = std::fs::remove_file(&path);
    let passfile = passfile(c)?;
    let cmd = pg_tool(c, limit, "pg_dump", &passfile)
        .args(["-Fc", "-f"])
        .arg(&path)
        .arg(MAINT_DB);
    let started = Instant::now();
    cmd.run_logged(&c.run_dir.join("maint-pg_dump.log")).await?;
    let seconds = started.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path)
        .map_err(|e| AgentError::io(format!("stat {}", path.display()), e))?
        .len();
    Ok(Dump {
        path,
        seconds,
        bytes,
    })
}

/// `pg_restore -j 1` of `dump` into the (fresh) restore database; its seconds.
pub async fn restore(c: &Cluster, limit: Duration, dump: &Path) -> Result<f64, AgentError> {
    let passfile = passfile(c)?;
    let cmd = pg_tool(c, limit, "pg_restore", &passfile)
        .args(["-j", "1", "--exit-on-error", "-d", RESTORE_DB])
        .arg(dump);
    let started = Instant::now();
    cmd.run_logged(&c.run_dir.join("maint-pg_restore.log"))
        .await?;
    Ok(started.elapsed().as_secs_f64())
}

/// What restoring a user's dump did.
pub struct Restored {
    pub seconds: f64,
    pub bytes: u64,
}

/// Restores the user's `pg_dump` archive `dump` (a file or a directory-format dump on this
/// host, readable by the PostgreSQL user) into the run's database with the build's own
/// `pg_restore`, as the PostgreSQL user; ownership and privileges in the dump are not
/// applied (the run has one role).
pub async fn restore_dump(
    c: &Cluster,
    limit: Duration,
    dump: &Path,
) -> Result<Restored, AgentError> {
    if !dump.is_absolute() {
        return Err(AgentError::invalid(
            "dump",
            format!("{} is not an absolute path", dump.display()),
        ));
    }
    let meta = std::fs::metadata(dump).map_err(|e| {
        AgentError::invalid(
            "dump",
            format!("{} cannot be read on this host: {e}", dump.display()),
        )
    })?;
    if !meta.is_file() && !meta.is_dir() {
        return Err(AgentError::invalid(
            "dump",
            format!(
                "{} is not a file or a directory-format dump",
                dump.display()
            ),
        ));
    }
    if let Some(dir) = dump.parent() {
        crate::users::check_traversable(dir, &c.run_as)
            .map_err(|e| AgentError::invalid("dump", e.to_string()))?;
    }
    let passfile = passfile(c)?;
    let cmd = pg_tool(c, limit, "pg_restore", &passfile)
        .args([
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "-j",
            "1",
        ])
        // Objects belong to the run's role, so the workers (who log in as it) can use them.
        .args(["--role", crate::conf::RUN_ROLE])
        .args(["-d", crate::cluster::BENCH_DB])
        .arg(dump);
    let started = Instant::now();
    let log = c.run_dir.join("init-pg_restore.log");
    cmd.run_logged(&log).await.map_err(|e| {
        // The reason names pg_restore's own first error (a damaged archive, a missing role...).
        let cause = std::fs::read_to_string(&log).ok().and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("pg_restore: error:"))
                .map(str::to_string)
        });
        e.with_cause(cause)
    })?;
    Ok(Restored {
        seconds: started.elapsed().as_secs_f64(),
        bytes: if meta.is_file() { meta.len() } else { 0 },
    })
}
