//! Small filesystem helpers: directories and installs the PostgreSQL user must reach.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::AgentError;

pub fn create_dir_0755(dir: &Path) -> Result<(), AgentError> {
    if !dir.is_dir() {
        std::fs::create_dir_all(dir)
            .map_err(|e| AgentError::io(format!("create {}", dir.display()), e))?;
        chmod_nofollow(dir, 0o755)
            .map_err(|e| AgentError::io(format!("chmod {}", dir.display()), e))?;
    }
    Ok(())
}

/// `path` opened without following a link in its place (`O_NOFOLLOW`): a link planted there
/// fails with ELOOP, and what it points to is never touched.
pub fn open_nofollow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Sets `path`'s mode through a descriptor opened without following links (`fchmod`).
pub fn chmod_nofollow(path: &Path, mode: u32) -> std::io::Result<()> {
    open_nofollow(path)?.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
}

/// Gives `path` (never what a link in its place points to) to `uid`:`gid`.
pub fn chown_nofollow(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
}

/// Makes the install readable (and directories/executables traversable) by the
/// unprivileged PostgreSQL user whatever the agent's umask was.
pub fn make_world_readable(dir: &Path) -> Result<(), AgentError> {
    let walk_err = |e: std::io::Error| AgentError::io(format!("chmod under {}", dir.display()), e);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        set_mode_bits(&d, 0o755).map_err(walk_err)?;
        for entry in std::fs::read_dir(&d).map_err(walk_err)? {
            let entry = entry.map_err(walk_err)?;
            let ft = entry.file_type().map_err(walk_err)?;
            if ft.is_dir() {
                stack.push(entry.path());
            } else if ft.is_file() {
                let mode = entry.metadata().map_err(walk_err)?.permissions().mode();
                let add = if mode & 0o100 != 0 { 0o555 } else { 0o444 };
                set_mode_bits(&entry.path(), add).map_err(walk_err)?;
            }
        }
    }
    Ok(())
}

fn set_mode_bits(path: &Path, add: u32) -> std::io::Result<()> {
    let f = open_nofollow(path)?;
    let mode = f.metadata()?.permissions().mode();
    if mode & add != add {
        f.set_permissions(std::fs::Permissions::from_mode((mode | add) & 0o7777))?;
    }
    Ok(())
}

/// Opens (creating) `path` and takes an exclusive `flock` on it, waiting as long as needed.
/// Separate opens conflict even inside one process.
pub async fn lock_file(path: PathBuf) -> Result<File, AgentError> {
    lock_with(path, false).await
}

/// A shared `flock` on `path` (many holders; excludes an exclusive holder).
pub async fn lock_file_shared(path: PathBuf) -> Result<File, AgentError> {
    lock_with(path, true).await
}

async fn lock_with(path: PathBuf, shared: bool) -> Result<File, AgentError> {
    tokio::task::spawn_blocking(move || {
        let f = open_lock(&path)?;
        let r = if shared { f.lock_shared() } else { f.lock() };
        r.map_err(|e| AgentError::io(format!("lock {}", path.display()), e))?;
        Ok(f)
    })
    .await
    .map_err(|e| AgentError::Other(format!("lock task panicked: {e}")))?
}

/// An exclusive `flock` if nobody holds one (None if held).
pub fn try_lock_file(path: &Path) -> Result<Option<File>, AgentError> {
    let f = open_lock(path)?;
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(AgentError::io(format!("lock {}", path.display()), e))
        }
    }
}

fn open_lock(path: &Path) -> Result<File, AgentError> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(|e| AgentError::io(format!("open {}", path.display()), e))
}

/// Disk usage of a tree (allocated blocks, like `du`), not following symlinks.
pub fn disk_usage(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    let mut total = meta.blocks() * 512;
    if meta.is_dir()
        && let Ok(rd) = std::fs::read_dir(path)
    {
        for e in rd.flatten() {
            total += disk_usage(&e.path());
        }
    }
    total
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// RFC 3339 (UTC, seconds) for a Unix time; empty for 0.
pub fn rfc3339(unix: u64) -> String {
    if unix == 0 {
        return String::new();
    }
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// A directory the agent itself owns gets o+x so the PostgreSQL user can pass through it
/// (e.g. a 0700 temporary directory used as work_dir).
pub fn open_own_dir_for_others(dir: &Path) -> Result<(), AgentError> {
    let chmod_err = |e| AgentError::io(format!("chmod {}", dir.display()), e);
    let f = open_nofollow(dir).map_err(chmod_err)?;
    let meta = f.metadata().map_err(chmod_err)?;
    if meta.uid() == nix::unistd::geteuid().as_raw() && meta.mode() & 0o001 == 0 {
        let mode = (meta.mode() | 0o011) & 0o7777;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(chmod_err)?;
    }
    Ok(())
}

/// Test setups put work_dir inside a 0700 temporary directory: ancestors below the system
/// temp dir that the agent owns get o+x too. Nothing outside the temp dir is changed.
pub fn open_own_temp_ancestors(dir: &Path) -> Result<(), AgentError> {
    let tmp = std::env::temp_dir();
    for a in dir.ancestors().skip(1) {
        if a.starts_with(&tmp) && a != tmp {
            open_own_dir_for_others(a)?;
        }
    }
    Ok(())
}

/// Streams the file through sha256.
pub async fn sha256_file(path: &Path) -> Result<String, AgentError> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let missing = |e: std::io::Error| AgentError::SourceMissing {
            path: path.clone(),
            reason: e.to_string(),
        };
        let mut f = File::open(&path).map_err(missing)?;
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = f.read(&mut buf).map_err(missing)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        Ok(hex::encode(h.finalize()))
    })
    .await
    .map_err(|e| AgentError::Other(format!("hash task panicked: {e}")))?
}

/// `sync`, then 3 into /proc/sys/vm/drop_caches: directly when the agent is root, otherwise
/// through the one command the agent may run as root, [`DROP_CACHES_HELPER`] with no
/// arguments (`sudo -n`; deploy/install.sh installs it, README.md gives its sudoers line).
/// Not permitted (no sudoers line, read-only /proc/sys in a container) is an `Err` with the
/// reason, logged as a warning; whether that fails a run is the caller's rule.
pub async fn drop_os_cache() -> Result<(), String> {
    let reason = if nix::unistd::geteuid().is_root() {
        let res = tokio::task::spawn_blocking(|| {
            nix::unistd::sync();
            std::fs::write(DROP_CACHES, b"3\n")
        })
        .await;
        match res {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => format!("cannot write {DROP_CACHES}: {e}"),
            Err(e) => format!("page cache drop panicked: {e}"),
        }
    } else {
        let helper = crate::process::Cmd::new(
            "page cache drop helper",
            "/usr/bin/sudo",
            std::time::Duration::from_secs(120),
        )
        .args(["-n", DROP_CACHES_HELPER]);
        match helper.output().await {
            Ok(_) => return Ok(()),
            Err(e) => format!(
                "the agent is not root and sudo -n {DROP_CACHES_HELPER} failed ({e}); \
                 run the agent as root, or see README.md for the helper's sudoers line"
            ),
        }
    };
    tracing::warn!(reason = %reason, "could not drop the OS page cache");
    Err(reason)
}

const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// The fixed helper an unprivileged agent drops the page cache with (via sudo, no
/// arguments): `sync; echo 3 > /proc/sys/vm/drop_caches`.
pub const DROP_CACHES_HELPER: &str = "/usr/local/libexec/blocklab/blocklab-drop-caches";

#[cfg(test)]
mod tests {

    /// As root, a link the build or PostgreSQL user plants where the agent changes a mode or
    /// an owner leaves what it points to untouched (tests run as root).
    #[test]
    fn no_mode_or_owner_change_follows_a_link() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("outside");
        std::fs::write(&target, "x").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("planted");
        std::os::unix::fs::symlink(&target, &link).unwrap();

        let e = chmod_nofollow(&link, 0o777).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        let e = make_world_readable(&link).unwrap_err();
        assert!(e.to_string().contains("chmod under"), "{e}");
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o600);

        let nobody = crate::process::RunAs {
            name: "nobody".into(),
            uid: 65534,
            gid: 65534,
            switch: true,
        };
        let owner = std::fs::metadata(&target).unwrap().uid();
        crate::users::chown_to(&link, &nobody).unwrap();
        assert_eq!(
            std::fs::metadata(&target).unwrap().uid(),
            owner,
            "target kept its owner"
        );
        assert_eq!(std::fs::symlink_metadata(&link).unwrap().uid(), 65534);

        // A directory the agent walks: the link inside it is skipped, the real file opened.
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        std::os::unix::fs::symlink(&target, tree.join("link")).unwrap();
        std::fs::write(tree.join("file"), "y").unwrap();
        std::fs::set_permissions(tree.join("file"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        make_world_readable(&tree).unwrap();
        assert_eq!(
            std::fs::metadata(tree.join("file")).unwrap().mode() & 0o444,
            0o444
        );
        assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o7777, 0o600);
    }
    use super::*;

    #[test]
    fn install_is_made_readable() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sub/file");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, b"x").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(
            dir.path().join("sub"),
            std::fs::Permissions::from_mode(0o700),
        )
        .unwrap();
        make_world_readable(dir.path()).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&f), 0o644);
        assert_eq!(mode(&dir.path().join("sub")), 0o755);
    }

    #[tokio::test]
    async fn sha256_streams_file_and_names_missing_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.tar.gz");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(
            sha256_file(&p).await.unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let err = sha256_file(&dir.path().join("none.tar.gz"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("none.tar.gz"), "{err}");
    }
}
