//! The unprivileged OS user PostgreSQL runs as, and making paths usable by it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use nix::unistd::{Uid, User, getegid, geteuid};

use crate::error::AgentError;
use crate::process::RunAs;

/// Resolves who runs initdb/postgres. As root a named non-root user is required (PostgreSQL
/// refuses root); otherwise only the current user is possible.
pub fn resolve_pg_user(pg_user: Option<&str>) -> Result<RunAs, AgentError> {
    let euid = geteuid();
    let lookup = |name: &str| {
        User::from_name(name)
            .map_err(|e| AgentError::invalid("pg_user", format!("looking up {name:?}: {e}")))?
            .ok_or_else(|| AgentError::invalid("pg_user", format!("no OS user named {name:?}")))
    };
    if euid.is_root() {
        let name = pg_user.ok_or_else(|| {
            AgentError::invalid(
                "pg_user",
                "the agent runs as root, so a non-root user for PostgreSQL is required",
            )
        })?;
        let u = lookup(name)?;
        if u.uid.is_root() {
            return Err(AgentError::invalid(
                "pg_user",
                format!("{name:?} is root; PostgreSQL refuses to run as root"),
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
    if let Some(name) = pg_user {
        let u = lookup(name)?;
        if u.uid != euid {
            return Err(AgentError::invalid(
                "pg_user",
                format!("cannot run as {name:?}: the agent is not root (running as {my_name:?})"),
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

/// Gives the build cache to `who` (entries made while builds ran as root, or by an agent
/// running as root): every entry owned by someone else, not following symlinks. Its top
/// directory loses group and other write permission. Returns how many entries changed owner.
pub fn take_build_cache(root: &Path, who: &RunAs) -> Result<u64, AgentError> {
    let meta = std::fs::metadata(root)
        .map_err(|e| AgentError::io(format!("stat {}", root.display()), e))?;
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        crate::fsutil::chmod_nofollow(root, mode & !0o022)
            .map_err(|e| AgentError::io(format!("chmod {}", root.display()), e))?;
    }
    if !who.switch {
        return Ok(0);
    }
    let mut changed = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p)
            .map_err(|e| AgentError::io(format!("stat {}", p.display()), e))?;
        if m.uid() != who.uid {
            crate::fsutil::chown_nofollow(&p, who.uid, who.gid)
                .map_err(|e| AgentError::io(format!("chown {} to {}", p.display(), who.name), e))?;
            changed += 1;
        }
        if m.is_dir() {
            let rd = std::fs::read_dir(&p)
                .map_err(|e| AgentError::io(format!("read {}", p.display()), e))?;
            stack.extend(rd.flatten().map(|e| e.path()));
        }
    }
    Ok(changed)
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
