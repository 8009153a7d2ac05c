//! The unprivileged OS user PostgreSQL runs as, and making paths usable by it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::unistd::{Uid, User, getegid, geteuid};

use crate::error::AgentError;
use crate::process::RunAs;

/// Resolves who runs initdb/postgres (`--pg-user`). As root a named non-root user is required
/// (PostgreSQL refuses root); otherwise only the current user is possible.
pub fn resolve_pg_user(pg_user: Option<&str>) -> Result<RunAs, AgentError> {
    resolve_user(
        "pg_user",
        "--pg-user",
        pg_user,
        "PostgreSQL refuses to run as root",
    )
}

/// Resolves who unpacks, configures, makes and installs a source (`--build-user`). As root a
/// named non-root user is required, and it must not be the servers' user `pg`: a build then
/// reaches neither the agent's files nor the servers'. Otherwise only the current user is
/// possible (developer mode: agent, builds and servers share one uid).
pub fn resolve_build_user(build_user: Option<&str>, pg: &RunAs) -> Result<RunAs, AgentError> {
    let who = resolve_user(
        "build_user",
        "--build-user",
        build_user,
        "a build runs a source's own configure and make",
    )?;
    if who.switch && (who.uid == pg.uid || who.name == pg.name) {
        return Err(AgentError::invalid(
            "build_user",
            format!(
                "--build-user {:?} is also the servers' user (--pg-user {:?}); allowed: an OS \
                 user of its own, neither root nor the --pg-user",
                who.name, pg.name
            ),
        ));
    }
    Ok(who)
}

/// One of the agent's users: as root `name` must be an existing user other than root;
/// otherwise the current user (and `name`, if given, must be it).
fn resolve_user(
    field: &str,
    flag: &str,
    name: Option<&str>,
    why_not_root: &str,
) -> Result<RunAs, AgentError> {
    let euid = geteuid();
    let allowed = "allowed: an existing OS user other than root";
    let lookup = |name: &str| {
        User::from_name(name)
            .map_err(|e| AgentError::invalid(field, format!("{flag}: looking up {name:?}: {e}")))?
            .ok_or_else(|| {
                AgentError::invalid(
                    field,
                    format!("{flag}: no OS user named {name:?} ({allowed})"),
                )
            })
    };
    if euid.is_root() {
        let name = name.ok_or_else(|| {
            AgentError::invalid(
                field,
                format!("the agent runs as root, so {flag} is required ({allowed})"),
            )
        })?;
        let u = lookup(name)?;
        if u.uid.is_root() {
            return Err(AgentError::invalid(
                field,
                format!("{flag} {name:?} is root; {why_not_root} ({allowed})"),
            ));
        }
        return Ok(RunAs {
            name: name.to_string(),
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
            switch: true,
        });
    }
    let me = User::from_uid(euid).ok().flatten();
    let my_name = me.map(|u| u.name).unwrap_or_else(|| euid.to_string());
    if let Some(name) = name {
        let u = lookup(name)?;
        if u.uid != euid {
            return Err(AgentError::invalid(
                field,
                format!(
                    "{flag}: cannot run as {name:?}: the agent is not root (running as \
                     {my_name:?}), so only its own user is possible"
                ),
            ));
        }
    }
    Ok(RunAs {
        name: my_name,
        uid: euid.as_raw(),
        gid: getegid().as_raw(),
        switch: false,
    })
}

/// Refuses a credential file (the agent's `--token-file`) that anyone but the agent could
/// read: as root it must be owned by root and not readable by group or others (builds and
/// servers run as other users). An agent that is not root shares its uid with its builds
/// anyway (developer mode), so it only warns.
pub fn check_credential_file(flag: &str, path: &Path) -> Result<(), AgentError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| AgentError::io(format!("{flag}: stat {}", path.display()), e))?;
    let mode = meta.mode() & 0o7777;
    let euid = geteuid().as_raw();
    let problem = if meta.uid() != euid {
        Some(format!(
            "is owned by uid {}, not the agent's uid {euid}",
            meta.uid()
        ))
    } else if mode & 0o077 != 0 {
        Some(format!("has mode {mode:o}, so group or others may read it"))
    } else {
        None
    };
    let Some(problem) = problem else {
        return Ok(());
    };
    if geteuid().is_root() {
        return Err(AgentError::invalid(
            "token_file",
            format!(
                "{flag} {} {problem}; allowed: a file owned by the agent's user with mode 600 \
                 (chown root:root and chmod 600 it)",
                path.display()
            ),
        ));
    }
    tracing::warn!(file = %path.display(), problem = %problem, "{flag}: the credential file should be the agent's alone (mode 600)");
    Ok(())
}

/// Gives `path` to the PostgreSQL user (only when the agent switches identity).
pub fn chown_to(path: &Path, who: &RunAs) -> Result<(), AgentError> {
    if !who.switch {
        return Ok(());
    }
    crate::fsutil::chown_nofollow(path, who.uid, who.gid)
        .map_err(|e| AgentError::io(format!("chown {} to {}", path.display(), who.name), e))
}

/// Creates `dir` (0755) if it is missing and gives it to `who`: a directory the PostgreSQL
/// user builds or unpacks in, writable by nobody else.
pub fn own_dir(dir: &Path, who: &RunAs) -> Result<(), AgentError> {
    crate::fsutil::create_dir_0755(dir)?;
    if who.switch {
        let meta = std::fs::metadata(dir)
            .map_err(|e| AgentError::io(format!("stat {}", dir.display()), e))?;
        if meta.uid() != who.uid {
            chown_to(dir, who)?;
        }
    }
    Ok(())
}

/// Checks that `who` can traverse every existing directory from `/` down to `dir`;
/// the error names the first directory that blocks it.
pub fn check_traversable(dir: &Path, who: &RunAs) -> Result<(), AgentError> {
    if Uid::from_raw(who.uid).is_root() {
        return Ok(());
    }
    let mut chain: Vec<&Path> = dir.ancestors().collect();
    chain.reverse();
    for d in chain {
        let Ok(meta) = std::fs::metadata(d) else {
            break; // not created yet: we create it 0755 ourselves
        };
        let mode = meta.mode();
        let ok = (meta.uid() == who.uid && mode & 0o100 != 0)
            || (meta.gid() == who.gid && mode & 0o010 != 0)
            || mode & 0o001 != 0;
        if !ok {
            return Err(AgentError::invalid(
                "work_dir",
                format!(
                    "{} (mode {:o}) is not traversable by user {}",
                    d.display(),
                    mode & 0o7777,
                    who.name
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn nobody() -> RunAs {
        RunAs {
            name: "nobody-test".into(),
            uid: 64_000,
            gid: 64_000,
            switch: false,
        }
    }

    #[test]
    fn traversal_check_names_the_blocking_dir() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(dir.path().join("a"), std::fs::Permissions::from_mode(0o750))
            .unwrap();
        let err = check_traversable(&inner.join("runs/x"), &nobody()).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("{} ", dir.path().join("a").display())),
            "{err}"
        );
        std::fs::set_permissions(dir.path().join("a"), std::fs::Permissions::from_mode(0o711))
            .unwrap();
        check_traversable(&inner.join("runs/x"), &nobody()).unwrap();
    }

    #[test]
    fn the_builds_user_is_its_own() {
        let me = resolve_pg_user(if geteuid().is_root() {
            Some("nobody")
        } else {
            None
        })
        .unwrap();
        if geteuid().is_root() {
            for (name, says) in [
                (None, "--build-user is required"),
                (Some("root"), "is root"),
                (
                    Some("nobody"),
                    "is also the servers' user (--pg-user \"nobody\")",
                ),
                (Some("no-such-user-blocklab"), "no OS user named"),
            ] {
                let err = resolve_build_user(name, &me).unwrap_err().to_string();
                assert!(err.starts_with("invalid build_user: "), "{err}");
                assert!(err.contains(says), "{name:?}: {err}");
                assert!(err.contains("allowed: "), "{name:?}: {err}");
            }
        } else {
            let b = resolve_build_user(None, &me).unwrap();
            assert_eq!((b.uid, b.switch), (me.uid, false));
        }
    }

    #[test]
    fn current_user_resolves() {
        if geteuid().is_root() {
            assert!(resolve_pg_user(None).is_err());
            assert!(resolve_pg_user(Some("root")).is_err());
            assert!(resolve_pg_user(Some("no-such-user-blocklab")).is_err());
        } else {
            let me = resolve_pg_user(None).unwrap();
            assert_eq!(me.uid, geteuid().as_raw());
            assert!(!me.switch);
        }
    }
}
