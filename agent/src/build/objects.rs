//! Compiled objects kept between the builds of one source family, so that a build after the
//! first compiles only what differs: the next commit of a git repository (a series, a
//! bisection step) or the same page sizes again. Another page size of a source compiles
//! anew: `c.h`, which every file includes, sizes a page buffer with `BLCKSZ`.
//!
//! A family is a tarball (its digest) or a git repository (its mirror). Its store,
//! `build_cache/.objects/<family>/`, holds a ccache directory and configure's cache files,
//! one per configure script and arguments (`config-<hash>.cache`; the page sizes are not
//! cached checks, so every page size of a source shares one). Objects are found with the
//! build directory's paths made relative, so builds in different directories share them.
//! A tarball's family uses ccache's depend mode: an object is found by the compiler's
//! arguments and the contents of its source and of the headers the compiler's `-MMD` output
//! names (make's `autodepend`, what configure's `--enable-depend` turns on), and a miss
//! costs the compile alone. A git repository's family uses the preprocessor mode (an object
//! found by its preprocessed text), which runs the preprocessor once more for every object
//! it cannot find: a checkout generates its parser's and catalogs' headers anew in every
//! build, and depend mode found none of the backend's objects for the next commit, where
//! the preprocessor mode finds all those the commit did not change.
//!
//! Containment: the store is written by the builds user, who also runs the configure scripts
//! of every source. So it is the builds user's only while a build of its own family runs (the
//! family's lock, held for the whole build, makes those builds one at a time), and the
//! agent's otherwise: handed back through directory descriptors, never following a link,
//! links, hard-linked files and special files removed, directories 0755 and files 0644. A
//! source's build cannot leave objects in another family's store for later builds to use.
//! Without ccache installed the store keeps configure's cache only.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::dir::Dir;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fchmod, fstat};
use nix::unistd::{UnlinkatFlags, fchown, unlinkat};
use sha2::{Digest, Sha256};

use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, lock_file};
use crate::process::{CHILD_PATH, Cmd, RunAs};

/// Where the stores live, under the build cache.
pub const OBJECTS: &str = ".objects";
/// Debian's directory of compiler names that run ccache.
const CCACHE_LINKS: &str = "/usr/lib/ccache";
/// A store's ccache keeps at most this much (its own least recently used clean-up).
const CCACHE_MAX_SIZE: &str = "3G";
const STATS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// Objects reused and compiled by one build.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reuse {
    pub hits: u64,
    pub misses: u64,
}

/// One family's store, the builds user's while this value lives.
pub struct Store {
    dir: PathBuf,
    builder: RunAs,
    ccache: bool,
    /// ccache's depend mode (a tarball's family) rather than its preprocessor mode.
    depend: bool,
    _lock: File,
}

impl Store {
    /// Takes the store of `family` for one build: waits for the family's other builds, then
    /// hands the store to `builder`.
    pub async fn open(root: &Path, family: &str, builder: &RunAs) -> Result<Self, AgentError> {
        let objects = root.join(OBJECTS);
        create_dir_0755(&objects)?;
        let lock = lock_file(objects.join(format!("{family}.lock"))).await?;
        let dir = objects.join(family);
        create_dir_0755(&dir)?;
        let ccache = Path::new(CCACHE_LINKS).join("gcc").exists();
        if !ccache {
            tracing::info!("ccache is not installed: a build compiles every object");
        }
        let (d, who) = (dir.clone(), builder.clone());
        if who.switch {
            tokio::task::spawn_blocking(move || hand_tree(&d, who.uid, who.gid, None))
                .await
                .map_err(|e| {
                    AgentError::Other(format!("object store hand-over panicked: {e}"))
                })??;
        }
        Ok(Self {
            dir,
            builder: builder.clone(),
            ccache,
            depend: ccache && family.starts_with(TARBALL_FAMILY),
            _lock: lock,
        })
    }

    /// configure's cache file for `configure` (the script) run with `args`.
    pub fn configure_cache(
        &self,
        configure: &Path,
        args: &[String],
    ) -> Result<PathBuf, AgentError> {
        let script = std::fs::read(configure)
            .map_err(|e| AgentError::io(format!("read {}", configure.display()), e))?;
        let mut h = Sha256::new();
        h.update(&script);
        for a in args {
            h.update(b"\0");
            h.update(a.as_bytes());
        }
        let hex = format!("{:x}", h.finalize());
        Ok(self.dir.join(format!("config-{}.cache", &hex[..16])))
    }

    /// The environment that makes the build's compilers go through the store's ccache, with
    /// paths below `base` (the build's own directory) taken as relative.
    pub fn env(&self, base: &Path) -> Vec<(String, String)> {
        if !self.ccache {
            return Vec::new();
        }
        let mut env = vec![
            ("PATH".into(), format!("{CCACHE_LINKS}:{CHILD_PATH}")),
            ("CCACHE_DIR".into(), self.ccache_dir().display().to_string()),
            ("CCACHE_BASEDIR".into(), base.display().to_string()),
            // The build directory is removed after the build: its path is not part of any
            // object's identity, even with debug information.
            ("CCACHE_NOHASHDIR".into(), "1".into()),
            ("CCACHE_MAXSIZE".into(), CCACHE_MAX_SIZE.into()),
            ("CCACHE_UMASK".into(), "022".into()),
        ];
        if self.depend {
            env.push(("CCACHE_DEPEND".into(), "1".into()));
        }
        env
    }

    /// `make`'s arguments that go with [`Store::env`]: compile rules that write the
    /// dependency lists depend mode reads. Without depend mode, none.
    pub fn make_args(&self) -> &'static [&'static str] {
        if self.depend {
            &["autodepend=yes"]
        } else {
            &[]
        }
    }

    fn ccache_dir(&self) -> PathBuf {
        self.dir.join("ccache")
    }

    fn ccache_cmd(&self, what: &str, arg: &str) -> Cmd {
        let mut c = Cmd::new(what, "ccache", STATS_TIMEOUT)
            .arg(arg)
            .cwd(&self.dir)
            .run_as(Some(&self.builder));
        for (k, v) in self.env(&self.dir) {
            c = c.env(&k, &v);
        }
        c
    }

    /// Zeroes the store's counters before a build.
    pub async fn zero_stats(&self) {
        if self.ccache
            && let Err(e) = self.ccache_cmd("ccache -z", "-z").output().await
        {
            tracing::warn!(error = %e, "could not zero ccache's counters");
        }
    }

    /// The objects reused and compiled since [`Store::zero_stats`].
    pub async fn reuse(&self) -> Option<Reuse> {
        if !self.ccache {
            return None;
        }
        match self
            .ccache_cmd("ccache --print-stats", "--print-stats")
            .output()
            .await
        {
            Ok(out) => Some(parse_stats(&out)),
            Err(e) => {
                tracing::warn!(error = %e, "could not read ccache's counters");
                None
            }
        }
    }

    /// Hands the store back to the agent (see the module docs).
    pub async fn close(self) -> Result<(), AgentError> {
        if !self.builder.switch {
            return Ok(());
        }
        let me = nix::unistd::geteuid().as_raw();
        let my_gid = nix::unistd::getegid().as_raw();
        let dir = self.dir.clone();
        tokio::task::spawn_blocking(move || hand_tree(&dir, me, my_gid, Some((0o755, 0o644))))
            .await
            .map_err(|e| AgentError::Other(format!("object store hand-back panicked: {e}")))?
    }
}

/// How a tarball's family name begins.
const TARBALL_FAMILY: &str = "src-";

/// The family of a tarball (its digest) or of a git repository (its mirror's path).
pub fn family(digest: &str, git_mirror: Option<&Path>) -> String {
    match git_mirror {
        Some(m) => {
            let h = Sha256::digest(format!("git:{}", m.display()).as_bytes());
            format!("git-{}", &format!("{h:x}")[..16])
        }
        None => format!("{TARBALL_FAMILY}{}", digest.get(..16).unwrap_or(digest)),
    }
}

/// Hits and misses from `ccache --print-stats` (tab-separated `name value` lines).
fn parse_stats(out: &str) -> Reuse {
    let mut r = Reuse::default();
    for line in out.lines() {
        let mut f = line.split_whitespace();
        let (Some(name), Some(value)) = (f.next(), f.next().and_then(|v| v.parse::<u64>().ok()))
        else {
            continue;
        };
        match name {
            "direct_cache_hit" | "preprocessed_cache_hit" => r.hits += value,
            "cache_miss" => r.misses += value,
            _ => {}
        }
    }
    r
}

fn io(what: &str, path: &Path, e: nix::Error) -> AgentError {
    AgentError::io(
        format!("{what} {}", path.display()),
        std::io::Error::from(e),
    )
}

/// Gives the tree at `top` to `uid`:`gid` through descriptors (a name swapped for a link
/// mid-walk is never followed). Links, files with several names and anything neither a
/// regular file nor a directory are removed. With `modes`, directories and files get those
/// permission bits.
fn hand_tree(top: &Path, uid: u32, gid: u32, modes: Option<(u32, u32)>) -> Result<(), AgentError> {
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let root = nix::fcntl::open(top, dir_flags, Mode::empty()).map_err(|e| io("open", top, e))?;
    take(&root, top, uid, gid, modes.map(|m| m.0))?;
    let mut stack: Vec<(OwnedFd, PathBuf)> = vec![(root, top.to_path_buf())];
    while let Some((fd, path)) = stack.pop() {
        let listing = fd
            .try_clone()
            .map_err(|e| AgentError::io(format!("list {}", path.display()), e))?;
        let mut names = Vec::new();
        let mut d = Dir::from_fd(listing).map_err(|e| io("list", &path, e))?;
        for entry in d.iter() {
            let entry = entry.map_err(|e| io("list", &path, e))?;
            let name = entry.file_name().to_owned();
            if name.to_bytes() != b"." && name.to_bytes() != b".." {
                names.push(name);
            }
        }
        for name in names {
            let child = path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
            let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
            let opened = openat(&fd, name.as_c_str(), flags, Mode::empty());
            let Ok(f) = opened else {
                // A link (ELOOP) or what the agent cannot open: not the store's.
                remove(&fd, &name, &child)?;
                continue;
            };
            let st = fstat(&f).map_err(|e| io("stat", &child, e))?;
            let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
            if kind == SFlag::S_IFDIR {
                take(&f, &child, uid, gid, modes.map(|m| m.0))?;
                stack.push((f, child));
            } else if kind == SFlag::S_IFREG && st.st_nlink == 1 {
                take(&f, &child, uid, gid, modes.map(|m| m.1))?;
            } else {
                drop(f);
                remove(&fd, &name, &child)?;
            }
        }
    }
    Ok(())
}

fn take(
    fd: &impl AsFd,
    path: &Path,
    uid: u32,
    gid: u32,
    mode: Option<u32>,
) -> Result<(), AgentError> {
    fchown(fd.as_fd(), Some(uid.into()), Some(gid.into())).map_err(|e| io("chown", path, e))?;
    if let Some(m) = mode {
        fchmod(fd.as_fd(), Mode::from_bits_truncate(m)).map_err(|e| io("chmod", path, e))?;
    }
    Ok(())
}

fn remove(dir: &OwnedFd, name: &std::ffi::CStr, path: &Path) -> Result<(), AgentError> {
    tracing::warn!(path = %path.display(), "removing what is not a plain file or directory from an object store");
    match unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) => Ok(()),
        // A directory the agent could not open: removed with what is in it.
        Err(nix::Error::EISDIR) => std::fs::remove_dir_all(path)
            .map_err(|e| AgentError::io(format!("remove {}", path.display()), e)),
        Err(e) => Err(io("remove", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    #[test]
    fn stats_count_direct_and_preprocessed_hits() {
        let out = "autoconf_test\t3\ncache_miss\t120\ndirect_cache_hit\t900\n\
                   preprocessed_cache_hit\t75\nstats_updated_timestamp\t1765000000\n";
        assert_eq!(
            parse_stats(out),
            Reuse {
                hits: 975,
                misses: 120
            }
        );
    }

    #[test]
    fn families_are_the_tarball_or_the_repository() {
        assert_eq!(
            family(&"ab".repeat(32), None),
            format!("src-{}", "ab".repeat(8))
        );
        let a = family("x", Some(Path::new("/cache/git/a")));
        assert!(a.starts_with("git-") && a.len() == 20, "{a}");
        assert_eq!(a, family("y", Some(Path::new("/cache/git/a"))));
        assert_ne!(a, family("x", Some(Path::new("/cache/git/b"))));
    }

    /// As root: the hand-over gives every plain file and directory to the builds user, and the
    /// hand-back takes them all to the agent with tame modes, removing what a build planted.
    #[test]
    fn hand_back_removes_links_and_tames_modes() {
        if !nix::unistd::geteuid().is_root() {
            return;
        }
        let base = tempfile::tempdir().unwrap();
        let store = base.path().join("store");
        let outside = base.path().join("outside");
        std::fs::write(&outside, "not the store's").unwrap();
        std::fs::create_dir_all(store.join("ccache/a")).unwrap();
        std::fs::write(store.join("ccache/a/obj"), "o").unwrap();
        std::fs::write(store.join("config-1.cache"), "c").unwrap();
        hand_tree(&store, 4242, 4243, None).unwrap();
        for p in ["", "ccache", "ccache/a", "ccache/a/obj", "config-1.cache"] {
            let m = std::fs::metadata(store.join(p)).unwrap();
            assert_eq!((m.uid(), m.gid()), (4242, 4243), "{p}");
        }
        assert_eq!(std::fs::metadata(&outside).unwrap().uid(), 0);
        // What a hostile build could leave: a link out, a second name of a file outside, a
        // FIFO, a directory anyone may write.
        std::os::unix::fs::symlink(&outside, store.join("ccache/link")).unwrap();
        std::fs::hard_link(&outside, store.join("ccache/a/hard")).unwrap();
        nix::unistd::mkfifo(&store.join("fifo"), Mode::from_bits_truncate(0o666)).unwrap();
        std::fs::set_permissions(
            store.join("ccache/a"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        std::fs::set_permissions(
            store.join("ccache/a/obj"),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        hand_tree(&store, 0, 0, Some((0o755, 0o644))).unwrap();
        for p in ["ccache/link", "ccache/a/hard", "fifo"] {
            assert!(
                std::fs::symlink_metadata(store.join(p)).is_err(),
                "{p} kept"
            );
        }
        for (p, mode) in [
            ("ccache/a", 0o755),
            ("ccache/a/obj", 0o644),
            ("config-1.cache", 0o644),
        ] {
            let m = std::fs::metadata(store.join(p)).unwrap();
            assert_eq!((m.uid(), m.mode() & 0o7777), (0, mode), "{p}");
        }
        let o = std::fs::metadata(&outside).unwrap();
        assert_eq!((o.uid(), o.nlink()), (0, 1));
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "not the store's"
        );
    }
}
