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

/// The passfile the pg tools authenticate with as `user` (mode 0600, owned by the pg user).
fn passfile(c: &Cluster, user: &str, password: &str) -> Result<PathBuf, AgentError> {
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
    f.write_all(format!("*:*:*:{user}:{password}\n").as_bytes())
        .map_err(|e| AgentError::io(format!("write {}", path.display()), e))?;
    crate::users::chown_to(&path, &c.run_as)?;
    Ok(path)
}

/// The build's own `tool` connecting to the run's server as `user`, run as the pg user in
/// the run directory.
fn pg_tool(c: &Cluster, limit: Duration, tool: &str, user: &str, passfile: &Path) -> Cmd {
    let dir = &c.run_dir;
    Cmd::new(tool, c.install.join("bin").join(tool), limit)
        .cwd(dir)
        .env("HOME", &dir.to_string_lossy())
        .env("PGPASSFILE", &passfile.to_string_lossy())
        .env("PGCONNECT_TIMEOUT", "10")
        .run_as(Some(&c.run_as))
        .args(["-h", &c.listen.to_string()])
        .args(["-p", &c.port.to_string()])
        .args(["-U", user, "-w"])
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
    let passfile = passfile(c, DB_USER, &c.password)?;
    let cmd = pg_tool(c, limit, "pg_dump", DB_USER, &passfile)
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
    let passfile = passfile(c, DB_USER, &c.password)?;
    let cmd = pg_tool(c, limit, "pg_restore", DB_USER, &passfile)
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

/// Where a user's dump may come from: the agent's dump directory, and none of the agent's
/// own trees below it (other runs' data and WAL, the builds).
pub struct DumpRoots<'a> {
    pub dumps_dir: &'a Path,
    pub forbidden: &'a [PathBuf],
}

/// The real path of the user's dump `dump`: absolute, without `..`, readable, and (links
/// resolved) inside the agent's dump directory and outside its other trees.
pub fn confine_dump(dump: &Path, roots: &DumpRoots<'_>) -> Result<PathBuf, AgentError> {
    let invalid = |why: String| AgentError::invalid("dump", why);
    if !dump.is_absolute() {
        return Err(invalid(format!(
            "{} is not an absolute path",
            dump.display()
        )));
    }
    if dump
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(invalid(format!("{} contains \"..\"", dump.display())));
    }
    let real = std::fs::canonicalize(dump).map_err(|e| {
        invalid(format!(
            "{} cannot be read on this host: {e}",
            dump.display()
        ))
    })?;
    let outside = || {
        invalid(format!(
            "{} is outside the agent's dump directory {} (agent option --dumps-dir)",
            dump.display(),
            roots.dumps_dir.display()
        ))
    };
    let root = std::fs::canonicalize(roots.dumps_dir).map_err(|_| outside())?;
    if !real.starts_with(&root) || real == root {
        return Err(outside());
    }
    for tree in roots.forbidden {
        if let Ok(tree) = std::fs::canonicalize(tree)
            && real.starts_with(&tree)
        {
            return Err(invalid(format!(
                "{} is inside the agent's own {}",
                dump.display(),
                tree.display()
            )));
        }
    }
    Ok(real)
}

/// Restores the user's `pg_dump` archive `dump` (a file or a directory-format dump in the
/// agent's dump directory, readable by the PostgreSQL user) into the run's database with the
/// build's own `pg_restore`, logged in as the run's role (never the superuser, so no entry
/// of the archive can act as one); ownership and privileges in the dump are not applied.
pub async fn restore_dump(
    c: &Cluster,
    limit: Duration,
    dump: &Path,
    roots: &DumpRoots<'_>,
) -> Result<Restored, AgentError> {
    let dump = confine_dump(dump, roots)?;
    let dump = dump.as_path();
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
    let run_role = crate::conf::RUN_ROLE;
    let passfile = passfile(c, run_role, &c.client_password)?;
    // Objects belong to the run's role, so the workers (who log in as it) can use them.
    let cmd = pg_tool(c, limit, "pg_restore", run_role, &passfile)
        .args([
            "--no-owner",
            "--no-privileges",
            "--exit-on-error",
            "-j",
            "1",
        ])
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

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(r: Result<PathBuf, AgentError>) -> String {
        r.expect_err("refused").to_string()
    }

    #[test]
    fn dumps_come_from_the_dump_directory_only() {
        let top = tempfile::tempdir().unwrap();
        let dumps = top.path().join("dumps");
        let runs = top.path().join("runs");
        std::fs::create_dir_all(dumps.join("app")).unwrap();
        std::fs::create_dir_all(runs.join("run-1")).unwrap();
        std::fs::write(dumps.join("app.dump"), b"PGDMP").unwrap();
        std::fs::write(runs.join("run-1/secret"), b"x").unwrap();
        std::os::unix::fs::symlink(runs.join("run-1/secret"), dumps.join("link.dump")).unwrap();
        let forbidden = [runs.clone()];
        let roots = DumpRoots {
            dumps_dir: &dumps,
            forbidden: &forbidden,
        };
        let real = confine_dump(&dumps.join("app.dump"), &roots).unwrap();
        assert_eq!(real, dumps.canonicalize().unwrap().join("app.dump"));
        assert!(confine_dump(&dumps.join("app"), &roots).is_ok());

        let r = reason(confine_dump(Path::new("app.dump"), &roots));
        assert!(
            r.contains("dump") && r.contains("not an absolute path"),
            "{r}"
        );
        let up = dumps.join("../runs/run-1/secret");
        let r = reason(confine_dump(&up, &roots));
        assert!(
            r.contains(&format!("{} contains \"..\"", up.display())),
            "{r}"
        );
        let outside = format!(
            "is outside the agent's dump directory {} (agent option --dumps-dir)",
            dumps.display()
        );
        for p in [
            dumps.join("link.dump"),
            runs.join("run-1/secret"),
            dumps.clone(),
        ] {
            let r = reason(confine_dump(&p, &roots));
            assert!(r.contains(&outside), "{}: {r}", p.display());
        }
        let r = reason(confine_dump(&dumps.join("missing.dump"), &roots));
        assert!(
            r.contains("missing.dump cannot be read on this host"),
            "{r}"
        );

        // A dump directory that holds the agent's own trees still keeps them out.
        let wide = DumpRoots {
            dumps_dir: top.path(),
            forbidden: &forbidden,
        };
        let r = reason(confine_dump(&runs.join("run-1/secret"), &wide));
        assert!(r.contains("is inside the agent's own"), "{r}");
        assert!(confine_dump(&dumps.join("app.dump"), &wide).is_ok());
    }
}
