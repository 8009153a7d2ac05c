//! The compiler cache of PostgreSQL builds: ccache, when it is installed and not turned off
//! (`--compiler-cache off`), as the PostgreSQL buildfarm uses it.
//!
//! Builds reach it through Debian's masquerade directory (`/usr/lib/ccache`, first on the
//! build's `PATH`), so configure finds and records plain `gcc` and `pg_config --cc` says so.
//! The cache lives in `build_cache/ccache`, owned by the PostgreSQL user like the rest of the
//! cache, with `CCACHE_BASEDIR` at the build cache: every build compiles out of tree in
//! `build_cache/.work/<key>-<uuid>` against the shared source tree, so the paths ccache sees
//! are the same relative paths in every build of a source. A build at another page size
//! changes `pg_config.h`, which misses ccache's direct mode; its preprocessor mode then hashes
//! each translation unit as the compiler sees it, and every unit in which no block-size macro
//! is expanded is a hit. The objects are the compiler's own output for the same input, so a
//! cached build is the build it would have been.

use std::path::{Path, PathBuf};

use crate::process::{CHILD_PATH, Cmd};

/// Debian's directory of compiler names that run ccache.
const MASQUERADE: &str = "/usr/lib/ccache";

/// ccache's own size cap for `build_cache/ccache` (a PostgreSQL 15 build's objects take
/// about 60 MB there, compressed).
const MAX_SIZE: &str = "4G";

/// Whether builds use ccache.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CompilerCacheMode {
    /// When ccache is installed (`/usr/lib/ccache/gcc` exists).
    #[default]
    Auto,
    /// Never.
    Off,
}

/// Where ccache keeps the objects of this cache's builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompilerCache {
    dir: PathBuf,
    base: PathBuf,
}

impl CompilerCache {
    /// The compiler cache of the build cache at `root`, if `mode` allows and ccache is
    /// installed.
    pub fn detect(root: &Path, mode: CompilerCacheMode) -> Option<Self> {
        Self::detect_in(root, mode, Path::new(MASQUERADE))
    }

    fn detect_in(root: &Path, mode: CompilerCacheMode, masquerade: &Path) -> Option<Self> {
        let installed = masquerade.join("gcc").exists() && masquerade.join("cc").exists();
        (mode == CompilerCacheMode::Auto && installed).then(|| Self {
            dir: root.join("ccache"),
            base: root.to_path_buf(),
        })
    }

    /// `build_cache/ccache`.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `cmd` with the environment that sends its compilations through the cache.
    pub fn apply(&self, cmd: Cmd) -> Cmd {
        cmd.env("PATH", &format!("{MASQUERADE}:{CHILD_PATH}"))
            .env("CCACHE_DIR", &self.dir.to_string_lossy())
            .env("CCACHE_BASEDIR", &self.base.to_string_lossy())
            .env("CCACHE_NOHASHDIR", "1")
            .env("CCACHE_MAXSIZE", MAX_SIZE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detected_only_when_installed_and_allowed() {
        let masq = tempfile::tempdir().unwrap();
        let root = Path::new("/var/cache/blocklab/builds");
        assert_eq!(
            CompilerCache::detect_in(root, CompilerCacheMode::Auto, masq.path()),
            None,
            "no gcc in the masquerade directory"
        );
        for name in ["gcc", "cc"] {
            std::fs::write(masq.path().join(name), "").unwrap();
        }
        let cc = CompilerCache::detect_in(root, CompilerCacheMode::Auto, masq.path()).unwrap();
        assert_eq!(cc.dir(), Path::new("/var/cache/blocklab/builds/ccache"));
        assert_eq!(
            CompilerCache::detect_in(root, CompilerCacheMode::Off, masq.path()),
            None
        );
    }
}
