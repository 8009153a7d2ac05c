//! Taking a finished install out of the builds user's hands: the agent copies the tree that
//! `make install DESTDIR=...` left in the build's own directory into the cache entry, as its
//! own files. The copy walks the staged tree through directory descriptors, one component at
//! a time, never following a link, and takes only what the builds user owns: regular files,
//! directories and relative links that stay in their directory tree. What lands in the cache
//! belongs to the agent (directories 0755, files 0644 or 0755, no set-id bits); a process the
//! build left behind may change the staged tree but not the copy.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use nix::dir::{Dir, Type};
use nix::fcntl::{OFlag, openat, readlinkat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat};

use crate::error::AgentError;

/// At most this many entries are taken from a staged install (PostgreSQL 15 installs about
/// 2 000).
const MAX_ENTRIES: usize = 200_000;

fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

/// Opens the directory `rel` below the directory `base`, one component at a time, never
/// following a link (`base` itself is opened without following a link in its place).
pub fn open_dir_beneath(base: &Path, rel: &Path) -> Result<OwnedFd, AgentError> {
    let fail = |e: nix::Error| {
        AgentError::io(
            format!("open {} below {}", rel.display(), base.display()),
            std::io::Error::from(e),
        )
    };
    let mut fd = nix::fcntl::open(base, dir_flags(), Mode::empty()).map_err(fail)?;
    for c in rel.components() {
        match c {
            Component::Normal(name) => {
                fd = openat(&fd, name, dir_flags(), Mode::empty()).map_err(fail)?;
            }
            Component::RootDir | Component::CurDir => {}
            _ => {
                return Err(AgentError::invalid(
                    "install",
                    format!("{} leaves {}", rel.display(), base.display()),
                ));
            }
        }
    }
    Ok(fd)
}

/// Copies the tree in the directory `src` into `dest` (which must not exist yet) as the
/// agent's own files; every entry must belong to `owner` (the builds user). Returns the number
/// of entries copied. On an error `dest` is left half-made: the caller removes it.
pub fn copy_install(src: OwnedFd, dest: &Path, owner: u32) -> Result<usize, AgentError> {
    let mut copied = 0usize;
    make_dir(dest)?;
    let mut stack: Vec<(OwnedFd, PathBuf)> = vec![(src, dest.to_path_buf())];
    while let Some((dir_fd, to)) = stack.pop() {
        let listing = dir_fd
            .try_clone()
            .map_err(|e| AgentError::io(format!("list {}", to.display()), e))?;
        let mut dir = Dir::from_fd(listing)
            .map_err(|e| AgentError::io(format!("list {}", to.display()), e.into()))?;
        let mut names: Vec<(OsString, Option<Type>)> = Vec::new();
        for entry in dir.iter() {
            let entry =
                entry.map_err(|e| AgentError::io(format!("list {}", to.display()), e.into()))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            names.push((name.to_os_string(), entry.file_type()));
        }
        for (name, kind) in names {
            copied += 1;
            if copied > MAX_ENTRIES {
                return Err(refused(
                    &to,
                    "holds more entries than any PostgreSQL install",
                ));
            }
            let target = to.join(&name);
            if kind == Some(Type::Symlink) {
                copy_link(&dir_fd, &name, &target, owner)?;
                continue;
            }
            // Opened without following a link and without blocking on a FIFO; what it is
            // and who owns it are read from the open descriptor, so nothing swapped in
            // between counts.
            let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
            let fd = match openat(&dir_fd, name.as_os_str(), flags, Mode::empty()) {
                Ok(fd) => fd,
                Err(nix::Error::ELOOP) => {
                    copy_link(&dir_fd, &name, &target, owner)?;
                    continue;
                }
                Err(e) => {
                    return Err(AgentError::io(
                        format!("open {}", target.display()),
                        e.into(),
                    ));
                }
            };
            let st = fstat(&fd)
                .map_err(|e| AgentError::io(format!("stat {}", target.display()), e.into()))?;
            check_owner(&st, &target, owner)?;
            match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
                SFlag::S_IFDIR => {
                    make_dir(&target)?;
                    stack.push((fd, target));
                }
                SFlag::S_IFREG => copy_file(fd, &target, st.st_mode)?,
                _ => {
                    return Err(refused(
                        &target,
                        "is neither a file, a directory nor a link",
                    ));
                }
            }
        }
    }
    Ok(copied)
}

fn refused(path: &Path, why: &str) -> AgentError {
    AgentError::invalid(
        "install",
        format!("{} {why}; the build's install is not taken", path.display()),
    )
}

fn check_owner(st: &FileStat, path: &Path, owner: u32) -> Result<(), AgentError> {
    if st.st_uid != owner {
        return Err(refused(
            path,
            &format!(
                "belongs to uid {}, not the builds user (uid {owner})",
                st.st_uid
            ),
        ));
    }
    Ok(())
}

fn make_dir(path: &Path) -> Result<(), AgentError> {
    std::fs::create_dir(path)
        .map_err(|e| AgentError::io(format!("create {}", path.display()), e))?;
    crate::fsutil::chmod_nofollow(path, 0o755)
        .map_err(|e| AgentError::io(format!("chmod {}", path.display()), e))
}

/// A new file of the agent's with `src`'s bytes: 0755 if `mode` has an execute bit, else 0644.
fn copy_file(src: OwnedFd, to: &Path, mode: u32) -> Result<(), AgentError> {
    let fail = |e| AgentError::io(format!("copy into {}", to.display()), e);
    let mut from = File::from(src);
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(to)
        .map_err(fail)?;
    std::io::copy(&mut from, &mut out).map_err(fail)?;
    let mode = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
    out.set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(fail)
}

/// A link is copied as a link when it is the builds user's and points, relatively, within
/// its own directory tree (`libpq.so -> libpq.so.5.15`, `postmaster -> postgres`).
fn copy_link(dir: &impl AsFd, name: &OsStr, to: &Path, owner: u32) -> Result<(), AgentError> {
    let st = nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .map_err(|e| AgentError::io(format!("stat {}", to.display()), e.into()))?;
    check_owner(&st, to, owner)?;
    let target = readlinkat(dir, name)
        .map_err(|e| AgentError::io(format!("read link {}", to.display()), e.into()))?;
    let t = Path::new(&target);
    let inside = !t.as_os_str().is_empty()
        && t.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Err(refused(
            to,
            &format!("is a link to {}, outside its directory", t.display()),
        ));
    }
    std::os::unix::fs::symlink(t, to)
        .map_err(|e| AgentError::io(format!("link {}", to.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    #[test]
    fn an_install_is_copied_as_the_agents_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let staged = dir.path().join("dest/prefix");
        std::fs::create_dir_all(staged.join("bin")).unwrap();
        std::fs::create_dir_all(staged.join("lib")).unwrap();
        std::fs::write(staged.join("bin/postgres"), b"elf").unwrap();
        std::fs::set_permissions(
            staged.join("bin/postgres"),
            std::fs::Permissions::from_mode(0o4777),
        )
        .unwrap();
        std::fs::write(staged.join("lib/libpq.so.5.15"), b"so").unwrap();
        std::fs::set_permissions(
            staged.join("lib/libpq.so.5.15"),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        std::os::unix::fs::symlink("libpq.so.5.15", staged.join("lib/libpq.so")).unwrap();
        std::os::unix::fs::symlink("postgres", staged.join("bin/postmaster")).unwrap();

        let src = open_dir_beneath(dir.path(), Path::new("dest/prefix")).unwrap();
        let dest = dir.path().join("cache-entry");
        assert_eq!(copy_install(src, &dest, uid()).unwrap(), 6);
        let mode = |p: &str| std::fs::symlink_metadata(dest.join(p)).unwrap().mode() & 0o7777;
        assert_eq!(mode(""), 0o755);
        assert_eq!(mode("bin/postgres"), 0o755);
        assert_eq!(mode("lib/libpq.so.5.15"), 0o644);
        assert_eq!(std::fs::read(dest.join("lib/libpq.so")).unwrap(), b"so");
        assert_eq!(
            std::fs::read_link(dest.join("bin/postmaster")).unwrap(),
            Path::new("postgres")
        );
    }

    #[test]
    fn links_out_of_the_tree_and_foreign_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"token").unwrap();
        for (i, link) in ["../secret", "/etc/passwd", "a/../../b"].iter().enumerate() {
            let staged = dir.path().join(format!("s{i}"));
            std::fs::create_dir_all(&staged).unwrap();
            std::os::unix::fs::symlink(link, staged.join("x")).unwrap();
            let src = open_dir_beneath(dir.path(), Path::new(&format!("s{i}"))).unwrap();
            let err = copy_install(src, &dir.path().join(format!("d{i}")), uid())
                .unwrap_err()
                .to_string();
            assert!(err.contains("outside its directory"), "{link}: {err}");
        }
        // A link in place of a directory on the way is never followed.
        std::os::unix::fs::symlink(dir.path(), dir.path().join("hop")).unwrap();
        let err = open_dir_beneath(dir.path(), Path::new("hop/s0")).unwrap_err();
        assert!(err.to_string().contains("hop/s0"), "{err}");
        // Entries of another uid are not taken.
        let staged = dir.path().join("foreign");
        std::fs::create_dir_all(&staged).unwrap();
        std::fs::write(staged.join("f"), b"x").unwrap();
        let src = open_dir_beneath(dir.path(), Path::new("foreign")).unwrap();
        let err = copy_install(src, &dir.path().join("d-foreign"), uid() + 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not the builds user"), "{err}");
    }
}
