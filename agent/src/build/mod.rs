//! The build cache: `build_cache/<key>/` is a PostgreSQL install prefix, trusted only when
//! it and `build_cache/<key>/.blocklab-complete` (written after the install was taken in)
//! belong to the agent. A build runs as the builds user in a directory of its own (see
//! `staging`); the agent copies its install into `build_cache/<key>/` (see `install`), so the
//! cache holds only the agent's files, readable by the servers' user and writable by nobody
//! else. `build_cache/<key>.lock` serialises check-or-build across tasks and processes;
//! `build_cache/<key>.inuse` is held shared by every user of the install (a running
//! cluster), so the LRU clean-up (the `cache` module) never removes a build in use;
//! `build_cache/<key>.last-used` records the last use.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::ProgressSink;
use blocklab_spec::BuildStep;
use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, lock_file, lock_file_shared, unix_now};
use crate::options::{BuildSpec, cache_key, major_version};
use crate::process::{Cmd, RunAs};
use source::{Fetched, SourceInfo};
use staging::BuildDir;

mod allow;
pub mod install;
mod make;
pub mod objects;
pub mod progress;
pub mod recipe;
pub mod source;
pub mod staging;

pub use allow::AllowedSources;
pub use make::configure_error;
use make::{Maker, report};

pub const MARKER: &str = ".blocklab-complete";
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Contents of the completion marker. Fields added later default, so older markers stay
/// valid (a marker that does not parse makes the build count as unfinished).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Marker {
    pub key: String,
    pub source_sha256: String,
    pub pg_version: String,
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    pub configure_flags: Vec<String>,
    pub compiler: String,
    pub build_seconds: f64,
    pub completed_at_unix: u64,
    #[serde(default)]
    pub segsize_gb: u32,
    /// Compiled-in WAL segment size (before PostgreSQL 11 only; 0 = default).
    #[serde(default)]
    pub wal_segsize_mb: u32,
    #[serde(default)]
    pub cflags: Vec<String>,
    #[serde(default)]
    pub source: String,
    #[serde(default)]
    pub git_commit: String,
    /// The object store the build used (see `objects`); empty before stores existed.
    #[serde(default)]
    pub object_family: String,
    /// Objects taken from the store, and compiled, by this build (0 and 0 without ccache).
    #[serde(default)]
    pub objects_reused: u64,
    #[serde(default)]
    pub objects_compiled: u64,
}

/// What a build (or the reuse of a cached one) gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BuildReport {
    pub build_key: String,
    pub source_sha256: String,
    pub reused: bool,
    pub build_seconds: f64,
    pub pg_version: String,
    pub install_dir: String,
    pub compiler: String,
    /// The commit of a git source (empty otherwise).
    pub git_commit: String,
}

/// A usable install, held in use (see the module docs) while this value lives.
#[derive(Clone, Debug)]
pub struct Build {
    pub result: BuildReport,
    pub prefix: PathBuf,
    /// `--wal-segsize` for initdb (PostgreSQL 11+ with a WAL segment size requested).
    pub initdb_wal_segsize_mb: Option<u32>,
    pub in_use: Arc<File>,
}

impl Build {
    pub fn bin(&self, name: &str) -> PathBuf {
        self.prefix.join("bin").join(name)
    }
}

pub struct BuildCache {
    root: PathBuf,
    make_jobs: usize,
    /// Who unpacks, configures, makes and installs (the builds user).
    builder: RunAs,
    /// Who runs what a build installed (the servers' user).
    server: RunAs,
    compiler: OnceCell<String>,
    /// The sources this agent builds (`--allow-source`; empty: any).
    allowed: AllowedSources,
}

impl BuildCache {
    /// `make_jobs` is bounded by the number of cores; every build step runs as `builder`,
    /// the installed `pg_config` as `server`.
    pub fn new(root: PathBuf, make_jobs: usize, builder: RunAs, server: RunAs) -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Self {
            root,
            make_jobs: make_jobs.clamp(1, cores),
            builder,
            server,
            compiler: OnceCell::new(),
            allowed: AllowedSources::default(),
        }
    }

    /// Builds only the `allowed` sources from now on.
    pub fn with_allowed_sources(mut self, allowed: AllowedSources) -> Self {
        self.allowed = allowed;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Who builds run as.
    pub fn builder(&self) -> &RunAs {
        &self.builder
    }

    /// The compiler identity that goes into every key (`gcc --version`, else `cc`).
    pub async fn compiler(&self) -> String {
        self.compiler
            .get_or_init(|| async { compiler_version().await })
            .await
            .clone()
    }

    /// Returns the install for `spec`, building it unless a complete one is cached.
    pub async fn ensure(
        &self,
        spec: &BuildSpec,
        progress: Option<&ProgressSink>,
    ) -> Result<Build, AgentError> {
        self.allowed.check(&spec.source)?;
        create_dir_0755(&self.root)?;
        report(progress, spec, BuildStep::Fetch).await;
        let fetched = source::fetch(&self.root, &spec.source, &self.builder, progress).await?;
        let name = fetched.digest.get(..16).unwrap_or(&fetched.digest);
        let dir = BuildDir::create(&self.root, name, &self.builder)?;
        let (mut unpacked, info) = match source::known(&self.root, &fetched.digest) {
            Some(info) => (None, info),
            None => {
                let (top, info) =
                    source::unpack(&self.root, &fetched, &dir.path, &self.builder).await?;
                (Some(top), info)
            }
        };
        let compiler = self.compiler().await;
        let old = major_version(&info.version) < 11;
        let key = cache_key(spec, &fetched.digest, &compiler, &info.version, old);
        let initdb_wal_segsize_mb =
            (!old && spec.wal_segsize_mb != 0).then_some(spec.wal_segsize_mb);
        let prefix = self.root.join(&key);
        let lock = lock_file(self.root.join(format!("{key}.lock"))).await?;
        let in_use = |m: &Marker, reused: bool| {
            let prefix = prefix.clone();
            let mut result = result_from(m, &prefix, reused);
            if let Some(c) = fetched.git_commit() {
                result.git_commit = c;
            }
            let inuse = self.root.join(format!("{key}.inuse"));
            async move {
                let guard = lock_file_shared(inuse).await?;
                touch_last_used(&prefix);
                Ok::<_, AgentError>(Build {
                    result,
                    prefix,
                    initdb_wal_segsize_mb,
                    in_use: Arc::new(guard),
                })
            }
        };

        set_aside_untrusted(&self.root, &key)?;
        if let Some(m) = read_marker(&prefix) {
            tracing::info!(key = %key, "reusing cached build");
            crate::metrics::BUILDS_REUSED.inc();
            drop(dir);
            let b = in_use(&m, true).await;
            drop(lock);
            return b;
        }
        remove_unfinished(&prefix)?;
        if let Some(p) = progress {
            p.stage(blocklab_spec::Stage::Building, &format!("building {key}"))
                .await;
        }
        tracing::info!(key = %key, jobs = self.make_jobs, source = %spec.source.describe(), builder = %self.builder.name, "building postgresql");
        let started = Instant::now();
        let top = match unpacked.take() {
            Some(top) => top,
            None => {
                source::unpack(&self.root, &fetched, &dir.path, &self.builder)
                    .await?
                    .0
            }
        };
        let outcome = self
            .build(
                spec, &fetched, &info, &top, &key, &prefix, &dir, old, progress,
            )
            .await;
        // Removing the build's tree (its objects) takes a while: off the async threads.
        let _ = tokio::task::spawn_blocking(move || drop(dir)).await;
        let reuse = match outcome {
            Ok(r) => r.unwrap_or_default(),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&prefix);
                return Err(e);
            }
        };
        let pg_version = pg_version(&prefix, &self.server).await?;
        let marker = Marker {
            key: key.clone(),
            source_sha256: fetched.digest.clone(),
            pg_version,
            block_size_kb: spec.block_size_kb,
            wal_block_size_kb: spec.wal_block_size_kb,
            configure_flags: spec.configure_flags.clone(),
            compiler,
            // In milliseconds: a short decimal reads back from the marker's JSON exactly, so a
            // reuse reports the same duration as the build.
            build_seconds: (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0,
            completed_at_unix: unix_now(),
            segsize_gb: spec.segsize_gb,
            wal_segsize_mb: if old { spec.wal_segsize_mb } else { 0 },
            cflags: spec.cflags.clone(),
            source: spec.source.describe(),
            git_commit: fetched.git_commit().unwrap_or_default(),
            object_family: fetched.family(),
            objects_reused: reuse.hits,
            objects_compiled: reuse.misses,
        };
        write_marker(&prefix, &marker)?;
        tracing::info!(key = %key, seconds = marker.build_seconds, objects_reused = reuse.hits, objects_compiled = reuse.misses, "build complete");
        crate::metrics::BUILDS_MADE.inc();
        let b = in_use(&marker, false).await;
        drop(lock);
        b
    }

    /// configure, make and `make install DESTDIR=` as the builds user in its own directory,
    /// then the install copied into `prefix` as the agent's.
    #[allow(clippy::too_many_arguments)]
    async fn build(
        &self,
        spec: &BuildSpec,
        fetched: &Fetched,
        info: &SourceInfo,
        top: &Path,
        key: &str,
        prefix: &Path,
        dir: &BuildDir,
        old: bool,
        progress: Option<&ProgressSink>,
    ) -> Result<Option<objects::Reuse>, AgentError> {
        let logs = self.root.join(format!("{key}.logs"));
        let _ = std::fs::remove_dir_all(&logs);
        create_dir_0755(&logs)?;
        let scratch = dir.path.join("build");
        crate::users::own_dir(&scratch, &self.builder)?;
        let dest = dir.path.join("dest");
        let reuse = Maker {
            root: &self.root,
            builder: &self.builder,
            make_jobs: self.make_jobs,
            spec,
            fetched,
            top,
            prefix,
            scratch: &scratch,
            dest: &dest,
            logs: &logs,
            old,
            progress,
        }
        .run()
        .await?;
        tracing::debug!(key = %key, version = %info.version, "taking the install into the cache");
        let staged_rel = dest.join(prefix.strip_prefix("/").unwrap_or(prefix));
        let (dir_path, rel, to, owner) = (
            dir.path.clone(),
            staged_rel
                .strip_prefix(&dir.path)
                .unwrap_or(&staged_rel)
                .to_path_buf(),
            prefix.to_path_buf(),
            self.builder.uid,
        );
        let entries = tokio::task::spawn_blocking(move || {
            let src = install::open_dir_beneath(&dir_path, &rel)?;
            install::copy_install(src, &to, owner)
        })
        .await
        .map_err(|e| AgentError::Other(format!("install copy panicked: {e}")))??;
        tracing::info!(key = %key, entries, "install taken into the cache");
        Ok(reuse)
    }
}

/// Records a use of the install at `prefix` (`<key>.last-used` beside it).
pub fn touch_last_used(prefix: &Path) {
    if let Err(e) = std::fs::write(last_used_path(prefix), unix_now().to_string()) {
        tracing::warn!(prefix = %prefix.display(), error = %e, "could not record build use");
    }
}

/// `<key>.last-used` for the prefix `<root>/<key>`.
pub fn last_used_path(prefix: &Path) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(".last-used");
    PathBuf::from(s)
}

/// A cache entry the agent did not make (an older layout's, or anyone's but the agent's uid)
/// is not trusted: set aside (see `staging::set_aside`) and built anew. We hold the key's lock.
fn set_aside_untrusted(root: &Path, key: &str) -> Result<(), AgentError> {
    use std::os::unix::fs::MetadataExt;
    let prefix = root.join(key);
    let Ok(meta) = std::fs::symlink_metadata(&prefix) else {
        return Ok(());
    };
    let me = nix::unistd::geteuid().as_raw();
    let marker = std::fs::symlink_metadata(prefix.join(MARKER)).map(|m| m.uid());
    let why = if !meta.is_dir() {
        "is not a directory".to_string()
    } else if meta.uid() != me {
        format!("belongs to uid {}, not the agent (uid {me})", meta.uid())
    } else if let Ok(uid) = marker.as_ref()
        && *uid != me
    {
        format!("has a completion marker of uid {uid}, not the agent's (uid {me})")
    } else {
        return Ok(());
    };
    staging::set_aside(root, key, &why)?;
    let _ = std::fs::remove_dir_all(root.join(format!("{key}.logs")));
    Ok(())
}

/// Removes a prefix that has no completion marker (a build that died half-way).
pub fn remove_unfinished(prefix: &Path) -> Result<bool, AgentError> {
    if prefix.exists() && read_marker(prefix).is_none() {
        tracing::warn!(dir = %prefix.display(), "removing half-finished build");
        std::fs::remove_dir_all(prefix)
            .map_err(|e| AgentError::io(format!("remove {}", prefix.display()), e))?;
        return Ok(true);
    }
    Ok(false)
}

pub fn read_marker(prefix: &Path) -> Option<Marker> {
    let text = std::fs::read_to_string(prefix.join(MARKER)).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write_marker(prefix: &Path, m: &Marker) -> Result<(), AgentError> {
    let json = serde_json::to_string_pretty(m)
        .map_err(|e| AgentError::Other(format!("encode marker: {e}")))?;
    let tmp = prefix.join(format!("{MARKER}.tmp"));
    std::fs::write(&tmp, json).map_err(|e| AgentError::io("write build marker", e))?;
    crate::fsutil::chmod_nofollow(&tmp, 0o644)
        .map_err(|e| AgentError::io("chmod build marker", e))?;
    std::fs::rename(&tmp, prefix.join(MARKER)).map_err(|e| AgentError::io("rename marker", e))
}

fn result_from(m: &Marker, prefix: &Path, reused: bool) -> BuildReport {
    BuildReport {
        build_key: m.key.clone(),
        source_sha256: m.source_sha256.clone(),
        reused,
        build_seconds: m.build_seconds,
        pg_version: m.pg_version.clone(),
        install_dir: prefix.display().to_string(),
        compiler: m.compiler.clone(),
        git_commit: m.git_commit.clone(),
    }
}

/// First line of `gcc --version` (or `cc --version`); `unknown` if neither runs.
pub async fn compiler_version() -> String {
    for cc in ["gcc", "cc"] {
        if let Ok(out) = Cmd::new("compiler version", cc, QUERY_TIMEOUT)
            .arg("--version")
            .output()
            .await
            && let Some(line) = out.lines().next().filter(|l| !l.trim().is_empty())
        {
            return line.trim().to_string();
        }
    }
    "unknown".into()
}

async fn pg_version(prefix: &Path, run_as: &RunAs) -> Result<String, AgentError> {
    let out = Cmd::new("pg_config", prefix.join("bin/pg_config"), QUERY_TIMEOUT)
        .arg("--version")
        .cwd(prefix)
        .run_as(Some(run_as))
        .output()
        .await?;
    let line = out.trim();
    Ok(line.strip_prefix("PostgreSQL ").unwrap_or(line).to_string())
}

#[cfg(test)]
mod tests;
