//! Where a build runs, and what of the cache a build may touch. The cache itself belongs to
//! the agent (no one else writes in it); each build gets a fresh directory of its own,
//! `<cache>/.staging/<name>-<uuid>/`, owned by the builds user and 0700, in a staging directory
//! only the agent writes. The source is unpacked there, configured and made there, and
//! installed there (`DESTDIR`); the agent then copies the install into the cache (see
//! `install`). `<dir>.lock` is held while a build directory lives, so a later build removes
//! only those whose build died.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::AgentError;
use crate::fsutil::{chmod_nofollow, chown_nofollow, try_lock_file};
use crate::process::RunAs;

pub const STAGING: &str = ".staging";
/// Where cache entries the agent does not trust are moved (emptied at the agent's start).
pub const UNTRUSTED: &str = ".untrusted";

/// One build's own directory; removed (with everything the build left in it) on drop.
pub struct BuildDir {
    pub path: PathBuf,
    lock_path: PathBuf,
    _lock: File,
}

impl BuildDir {
    /// Creates `<cache>/.staging/<name>-<uuid>/` for `builder` (0700, its own).
    pub fn create(cache: &Path, name: &str, builder: &RunAs) -> Result<Self, AgentError> {
        let staging = cache.join(STAGING);
        agent_dir(&staging)?;
        remove_dead(&staging);
        let path = staging.join(format!("{name}-{}", uuid::Uuid::new_v4()));
        let lock_path = lock_of(&path);
        let lock = try_lock_file(&lock_path)?
            .ok_or_else(|| AgentError::Other(format!("{} is locked", lock_path.display())))?;
        std::fs::create_dir(&path)
            .map_err(|e| AgentError::io(format!("create {}", path.display()), e))?;
        chmod_nofollow(&path, 0o700)
            .map_err(|e| AgentError::io(format!("chmod {}", path.display()), e))?;
        if builder.switch {
            chown_nofollow(&path, builder.uid, builder.gid).map_err(|e| {
                AgentError::io(format!("chown {} to {}", path.display(), builder.name), e)
            })?;
        }
        Ok(Self {
            path,
            lock_path,
            _lock: lock,
        })
    }
}

impl Drop for BuildDir {
    fn drop(&mut self) {
        // std's remove_dir_all never follows a link the build planted.
        if let Err(e) = std::fs::remove_dir_all(&self.path) {
            tracing::warn!(dir = %self.path.display(), error = %e, "could not remove build dir");
        }
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

fn lock_of(dir: &Path) -> PathBuf {
    let mut s = dir.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// Removes build directories whose build is gone (their lock is free).
fn remove_dead(staging: &Path) {
    let Ok(rd) = std::fs::read_dir(staging) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "lock") {
            continue;
        }
        let lock = lock_of(&p);
        if let Ok(Some(_held)) = try_lock_file(&lock) {
            tracing::warn!(dir = %p.display(), "removing the directory of a build that died");
            let _ = std::fs::remove_dir_all(&p);
            let _ = std::fs::remove_file(&lock);
        }
    }
}

/// A directory of the agent's: created 0755 if missing; as root, one left by someone else
/// (an older layout) is removed first, so nobody else can write in it (not root, that is an
/// error).
fn agent_dir(dir: &Path) -> Result<(), AgentError> {
    let me = nix::unistd::geteuid().as_raw();
    if let Ok(m) = std::fs::symlink_metadata(dir)
        && (m.uid() != me || !m.is_dir())
    {
        if me != 0 {
            return Err(AgentError::Other(format!(
                "{} belongs to uid {}, not the agent (uid {me})",
                dir.display(),
                m.uid()
            )));
        }
        tracing::warn!(dir = %dir.display(), owner = m.uid(), "not the agent's; removing it");
        let gone = if m.is_dir() {
            std::fs::remove_dir_all(dir)
        } else {
            std::fs::remove_file(dir)
        };
        gone.map_err(|e| AgentError::io(format!("remove {}", dir.display()), e))?;
    }
    crate::fsutil::create_dir_0755(dir)?;
    chmod_nofollow(dir, 0o755).map_err(|e| AgentError::io(format!("chmod {}", dir.display()), e))
}

/// Makes the cache at `root` the agent's at start: the top directory loses group and other
/// write permission (and, as root, becomes the agent's); `.untrusted/` is emptied. As root,
/// whatever an older layout left there for another user is not trusted: a directory (a build,
/// its logs, unpacked sources, scratch, downloads) is set aside, any other entry removed; git
/// mirrors become the builds user's. Returns how many entries changed.
pub fn claim_cache(root: &Path, builder: &RunAs) -> Result<u64, AgentError> {
    let me = nix::unistd::geteuid();
    let meta = std::fs::metadata(root)
        .map_err(|e| AgentError::io(format!("stat {}", root.display()), e))?;
    let mut changed = 0;
    if me.is_root() && meta.uid() != 0 {
        chown_nofollow(root, 0, 0)
            .map_err(|e| AgentError::io(format!("chown {}", root.display()), e))?;
        changed += 1;
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        chmod_nofollow(root, mode & !0o022)
            .map_err(|e| AgentError::io(format!("chmod {}", root.display()), e))?;
    }
    let _ = std::fs::remove_dir_all(root.join(UNTRUSTED));
    if !me.is_root() {
        return Ok(changed);
    }
    let rd = std::fs::read_dir(root)
        .map_err(|e| AgentError::io(format!("read {}", root.display()), e))?;
    for e in rd.flatten() {
        let p = e.path();
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "git" && m.is_dir() {
            changed += claim_git(&p, builder)?;
        } else if m.uid() != me.as_raw() {
            let why = format!("belongs to uid {}, not the agent (uid {me})", m.uid());
            set_aside(root, &name, &why)?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Takes `root/name` out of the cache, for the reason `why` (logged): a file is removed; a
/// directory is removed, or, while a server still uses it (`<name>.inuse` is held), moved into
/// `.untrusted/`. A build is then made anew when it is asked for.
pub fn set_aside(root: &Path, name: &str, why: &str) -> Result<(), AgentError> {
    let p = root.join(name);
    let Ok(m) = std::fs::symlink_metadata(&p) else {
        return Ok(());
    };
    tracing::warn!(entry = %p.display(), reason = %why, "cache entry not trusted; set aside (a build is made anew when asked for)");
    let gone = if !m.is_dir() {
        std::fs::remove_file(&p)
    } else if !in_use(root, name)? {
        std::fs::remove_dir_all(&p)
    } else {
        let aside = root.join(UNTRUSTED);
        crate::fsutil::create_dir_0755(&aside)?;
        std::fs::rename(&p, aside.join(format!("{name}-{}", uuid::Uuid::new_v4())))
    };
    gone.map_err(|e| AgentError::io(format!("set aside {}", p.display()), e))
}

/// Whether a server holds `<name>.inuse` (a build's use lock; see the `build` module).
fn in_use(root: &Path, name: &str) -> Result<bool, AgentError> {
    let lock = root.join(format!("{name}.inuse"));
    Ok(lock.is_file() && try_lock_file(&lock)?.is_none())
}

/// The git directory is the agent's (its locks, logs and configuration: another user's are
/// removed); each mirror in it is the builds user's.
fn claim_git(git: &Path, builder: &RunAs) -> Result<u64, AgentError> {
    let me = nix::unistd::geteuid().as_raw();
    let mut changed = 0;
    let m = std::fs::symlink_metadata(git)
        .map_err(|e| AgentError::io(format!("stat {}", git.display()), e))?;
    if m.uid() != me {
        chown_nofollow(git, me, nix::unistd::getegid().as_raw())
            .map_err(|e| AgentError::io(format!("chown {}", git.display()), e))?;
        changed += 1;
    }
    let rd =
        std::fs::read_dir(git).map_err(|e| AgentError::io(format!("read {}", git.display()), e))?;
    for e in rd.flatten() {
        let p = e.path();
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            changed += give_tree(&p, builder)?;
        } else if std::fs::symlink_metadata(&p).is_ok_and(|m| m.uid() != me) {
            std::fs::remove_file(&p)
                .map_err(|e| AgentError::io(format!("remove {}", p.display()), e))?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Gives every entry under `root` not yet `who`'s to `who`, never following a link.
fn give_tree(root: &Path, who: &RunAs) -> Result<u64, AgentError> {
    let mut changed = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p)
            .map_err(|e| AgentError::io(format!("stat {}", p.display()), e))?;
        if m.uid() != who.uid {
            chown_nofollow(&p, who.uid, who.gid)
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
