//! The build cache: `build_cache/<key>/` is a PostgreSQL install prefix, trusted only when
//! `build_cache/<key>/.blocklab-complete` exists (written after `make install` succeeded).
//! `build_cache/<key>.lock` serialises check-or-build across tasks and processes.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blocklab_proto::BuildResult;
use blocklab_proto::fleet::ProgressSink;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, make_world_readable};
use crate::options::{BuildSpec, cache_key, check_tarball};
use crate::process::Cmd;

pub const MARKER: &str = ".blocklab-complete";
const UNPACK_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const CONFIGURE_TIMEOUT: Duration = Duration::from_secs(10 * 60);
const MAKE_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const INSTALL_TIMEOUT: Duration = Duration::from_secs(10 * 60);
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Contents of the completion marker.
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
}

/// A usable install.
#[derive(Clone, Debug)]
pub struct Build {
    pub result: BuildResult,
    pub prefix: PathBuf,
}

impl Build {
    pub fn bin(&self, name: &str) -> PathBuf {
        self.prefix.join("bin").join(name)
    }
}

pub struct BuildCache {
    root: PathBuf,
    make_jobs: usize,
    compiler: OnceCell<String>,
}

impl BuildCache {
    pub fn new(root: PathBuf, make_jobs: usize) -> Self {
        Self {
            root,
            make_jobs: make_jobs.max(1),
            compiler: OnceCell::new(),
        }
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
        check_tarball(&spec.tarball)?;
        let source_sha256 = sha256_file(&spec.tarball).await?;
        let compiler = self.compiler().await;
        let key = cache_key(spec, &source_sha256, &compiler);
        let prefix = self.root.join(&key);
        create_dir_0755(&self.root)?;
        let _lock = lock_file(self.root.join(format!("{key}.lock"))).await?;

        if let Some(m) = read_marker(&prefix) {
            tracing::info!(key = %key, "reusing cached build");
            return Ok(Build {
                result: result_from(&m, &prefix, true),
                prefix,
            });
        }
        remove_unfinished(&prefix)?;
        if let Some(p) = progress {
            p.stage("building", &format!("building {key}")).await;
        }
        tracing::info!(key = %key, jobs = self.make_jobs, "building postgresql");
        let started = Instant::now();
        let outcome = self.build(spec, &key, &prefix, progress).await;
        if let Err(e) = outcome {
            let _ = std::fs::remove_dir_all(&prefix);
            return Err(e);
        }
        let pg_version = pg_version(&prefix).await?;
        let marker = Marker {
            key: key.clone(),
            source_sha256,
            pg_version,
            block_size_kb: spec.block_size_kb,
            wal_block_size_kb: spec.wal_block_size_kb,
            configure_flags: spec.configure_flags.clone(),
            compiler,
            build_seconds: started.elapsed().as_secs_f64(),
            completed_at_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        };
        write_marker(&prefix, &marker)?;
        tracing::info!(key = %key, seconds = marker.build_seconds, "build complete");
        Ok(Build {
            result: result_from(&marker, &prefix, false),
            prefix,
        })
    }

    async fn build(
        &self,
        spec: &BuildSpec,
        key: &str,
        prefix: &Path,
        progress: Option<&ProgressSink>,
    ) -> Result<(), AgentError> {
        let logs = self.root.join(format!("{key}.logs"));
        let _ = std::fs::remove_dir_all(&logs);
        create_dir_0755(&logs)?;
        let work = self.root.join(".work");
        create_dir_0755(&work)?;
        remove_stale_scratch(&work, key);
        let scratch = work.join(format!("{key}-{}", uuid::Uuid::new_v4()));
        create_dir_0755(&scratch)?;
        let res = self.steps(spec, prefix, &scratch, &logs, progress).await;
        if let Err(e) = std::fs::remove_dir_all(&scratch) {
            tracing::warn!(dir = %scratch.display(), error = %e, "could not remove scratch dir");
        }
        res
    }

    async fn steps(
        &self,
        spec: &BuildSpec,
        prefix: &Path,
        scratch: &Path,
        logs: &Path,
        progress: Option<&ProgressSink>,
    ) -> Result<(), AgentError> {
        let say = |m: &'static str| async move {
            if let Some(p) = progress {
                p.stage("building", m).await;
            }
        };
        Cmd::new("unpack", "tar", UNPACK_TIMEOUT)
            .arg("-xf")
            .arg(&spec.tarball)
            .arg("-C")
            .arg(scratch)
            .run_logged(&logs.join("unpack.log"))
            .await?;
        let src = source_dir(scratch)?;
        say("configure").await;
        let mut prefix_arg = std::ffi::OsString::from("--prefix=");
        prefix_arg.push(prefix);
        Cmd::new("configure", src.join("configure"), CONFIGURE_TIMEOUT)
            .arg(prefix_arg)
            .arg(format!("--with-blocksize={}", spec.block_size_kb))
            .arg(format!("--with-wal-blocksize={}", spec.wal_block_size_kb))
            .args(&spec.configure_flags)
            .cwd(&src)
            .run_logged(&logs.join("configure.log"))
            .await?;
        say("make").await;
        Cmd::new("make", "make", MAKE_TIMEOUT)
            .arg(format!("-j{}", self.make_jobs))
            .cwd(&src)
            .run_logged(&logs.join("build.log"))
            .await?;
        say("make install").await;
        Cmd::new("make install", "make", INSTALL_TIMEOUT)
            .arg("install")
            .cwd(&src)
            .run_logged(&logs.join("install.log"))
            .await?;
        let p = prefix.to_path_buf();
        tokio::task::spawn_blocking(move || make_world_readable(&p))
            .await
            .map_err(|e| AgentError::Other(format!("permission walk panicked: {e}")))?
    }
}

/// Removes scratch dirs of this key left by a build that died (we hold the key's lock).
fn remove_stale_scratch(work: &Path, key: &str) {
    let Ok(entries) = std::fs::read_dir(work) else {
        return;
    };
    let prefix = format!("{key}-");
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(&prefix) {
            tracing::warn!(dir = %e.path().display(), "removing stale build scratch dir");
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The single top-level directory of an unpacked tarball that holds `configure`.
fn source_dir(scratch: &Path) -> Result<PathBuf, AgentError> {
    let entries = std::fs::read_dir(scratch)
        .map_err(|e| AgentError::io(format!("read {}", scratch.display()), e))?;
    for entry in entries.flatten() {
        let p = entry.path();
        if p.join("configure").is_file() {
            return Ok(p);
        }
    }
    Err(AgentError::Other(
        "the tarball has no top-level directory with a configure script".into(),
    ))
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

fn write_marker(prefix: &Path, m: &Marker) -> Result<(), AgentError> {
    let json = serde_json::to_string_pretty(m)
        .map_err(|e| AgentError::Other(format!("encode marker: {e}")))?;
    let tmp = prefix.join(format!("{MARKER}.tmp"));
    std::fs::write(&tmp, json).map_err(|e| AgentError::io("write build marker", e))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))
        .map_err(|e| AgentError::io("chmod build marker", e))?;
    std::fs::rename(&tmp, prefix.join(MARKER)).map_err(|e| AgentError::io("rename marker", e))
}

fn result_from(m: &Marker, prefix: &Path, reused: bool) -> BuildResult {
    BuildResult {
        build_key: m.key.clone(),
        source_sha256: m.source_sha256.clone(),
        reused,
        build_seconds: m.build_seconds,
        pg_version: m.pg_version.clone(),
        install_dir: prefix.display().to_string(),
        ..Default::default()
    }
}

async fn lock_file(path: PathBuf) -> Result<File, AgentError> {
    tokio::task::spawn_blocking(move || {
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| AgentError::io(format!("open {}", path.display()), e))?;
        f.lock()
            .map_err(|e| AgentError::io(format!("lock {}", path.display()), e))?;
        Ok(f)
    })
    .await
    .map_err(|e| AgentError::Other(format!("lock task panicked: {e}")))?
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

async fn pg_version(prefix: &Path) -> Result<String, AgentError> {
    let out = Cmd::new("pg_config", prefix.join("bin/pg_config"), QUERY_TIMEOUT)
        .arg("--version")
        .output()
        .await?;
    let line = out.trim();
    Ok(line.strip_prefix("PostgreSQL ").unwrap_or(line).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_finished_build_is_removed_complete_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let half = dir.path().join("pg15-b8-w8-aaaa");
        std::fs::create_dir_all(half.join("bin")).unwrap();
        std::fs::write(half.join("bin/postgres"), b"x").unwrap();
        assert!(remove_unfinished(&half).unwrap());
        assert!(!half.exists());

        let done = dir.path().join("pg15-b8-w8-bbbb");
        std::fs::create_dir_all(done.join("bin")).unwrap();
        let m = Marker {
            key: "pg15-b8-w8-bbbb".into(),
            source_sha256: "ff".into(),
            pg_version: "15.18".into(),
            block_size_kb: 8,
            wal_block_size_kb: 8,
            configure_flags: vec![],
            compiler: "gcc".into(),
            build_seconds: 1.5,
            completed_at_unix: 1,
        };
        write_marker(&done, &m).unwrap();
        assert!(!remove_unfinished(&done).unwrap());
        assert_eq!(read_marker(&done), Some(m));

        // A corrupt marker counts as unfinished.
        std::fs::write(done.join(MARKER), b"{").unwrap();
        assert!(remove_unfinished(&done).unwrap());
        assert!(!done.exists());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn build_lock_is_exclusive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.lock");
        let first = lock_file(path.clone()).await.unwrap();
        let second = tokio::spawn(lock_file(path.clone()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!second.is_finished(), "second lock must wait for the first");
        drop(first);
        let got = tokio::time::timeout(Duration::from_secs(5), second).await;
        assert!(matches!(got, Ok(Ok(Ok(_)))), "second lock not acquired");
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
