//! PostgreSQL sources: a local tarball, a downloaded tarball (cached under
//! `build_cache/downloads/<sha256>/`), or a git ref (mirror under `build_cache/git/<hash of
//! url>`, exported with `git archive`). Every source is unpacked once into
//! `build_cache/sources/<digest>/`, trusted only with its `.blocklab-source.json` marker, and
//! builds run out of tree (VPATH) from there.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use blocklab_daemon::fleet::ProgressSink;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, lock_file, sha256_file};
use crate::options::{Source, check_tarball, version_hint};
use crate::process::{Cmd, RunAs};
use crate::users::own_dir;

const UNPACK_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const GIT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const MAX_DOWNLOAD_BYTES: u64 = 4 << 30;
const SOURCE_MARKER: &str = ".blocklab-source.json";

/// An unpacked, checked source tree.
#[derive(Clone, Debug)]
pub struct SourceTree {
    /// The directory holding `configure`.
    pub dir: PathBuf,
    /// sha256 of the tarball; for git, sha256 of `git-tree:<tree id>`.
    pub digest: String,
    /// `PACKAGE_VERSION` from `configure`, e.g. `15.18`.
    pub version: String,
    /// What goes into the readable part of the build key.
    pub version_hint: String,
    pub git_commit: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct SourceMarker {
    top: String,
    version: String,
}

/// Fetches and unpacks `source` (or reuses what is cached under `cache`); git and tar run
/// as `who`.
pub async fn prepare(
    cache: &Path,
    source: &Source,
    who: &RunAs,
    progress: Option<&ProgressSink>,
) -> Result<SourceTree, AgentError> {
    let say = |m: String| async move {
        if let Some(p) = progress {
            p.stage(blocklab_spec::Stage::Building, &m).await;
        }
    };
    match source {
        Source::Tarball { path, sha256 } => {
            check_tarball(path)?;
            let digest = sha256_file(path).await?;
            if let Some(expected) = sha256
                && *expected != digest
            {
                return Err(AgentError::ChecksumMismatch {
                    what: path.display().to_string(),
                    expected: expected.clone(),
                    actual: digest,
                });
            }
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let hint = version_hint(&name);
            let tree =
                unpack_cached(cache, &digest, &source.describe(), path, None, hint, who).await?;
            Ok(named_by_version(tree))
        }
        Source::Url { url, sha256 } => {
            let file = download_cached(cache, url, sha256, progress).await?;
            let name = url.split(['?', '#']).next().unwrap_or(url);
            let hint = version_hint(name);
            let tree = unpack_cached(cache, sha256, url, &file, None, hint, who).await?;
            Ok(named_by_version(tree))
        }
        Source::Git { url, git_ref } => {
            say(format!("fetching {url} {git_ref}")).await;
            let mirror = git_mirror_dir(cache, url);
            own_dir(&cache.join("git"), who)?;
            write_git_config(&cache.join("git"))?;
            let _lock = lock_file(mirror.with_extension("lock")).await?;
            let (commit, tree) = git_resolve(&mirror, url, git_ref, who).await?;
            let digest = hex::encode(Sha256::digest(format!("git-tree:{tree}")));
            let what = format!("{url} at {git_ref} ({commit})");
            let exported = mirror.with_extension(format!("{commit}.tar"));
            let res = async {
                if !cache
                    .join("sources")
                    .join(&digest)
                    .join(SOURCE_MARKER)
                    .exists()
                {
                    git(&mirror, "git archive", who)
                        .args(["archive", "--format=tar", "--prefix=postgresql/", "-o"])
                        .arg(&exported)
                        .arg(&commit)
                        .run_logged(&mirror.with_extension("log"))
                        .await?;
                }
                unpack_cached(
                    cache,
                    &digest,
                    &what,
                    &exported,
                    Some(commit.clone()),
                    String::new(),
                    who,
                )
                .await
            }
            .await;
            let _ = std::fs::remove_file(&exported);
            let mut tree = res?;
            tree.version_hint = tree.version.clone();
            Ok(tree)
        }
    }
}

/// Names the build key by the version the tree declares, not by the file it came in, so one
/// source under two file names shares its builds.
fn named_by_version(mut tree: SourceTree) -> SourceTree {
    if !tree.version.is_empty() {
        tree.version_hint = tree.version.clone();
    }
    tree
}

/// Where the mirror of a git URL lives.
pub fn git_mirror_dir(cache: &Path, url: &str) -> PathBuf {
    let h = hex::encode(Sha256::digest(url.as_bytes()));
    cache.join("git").join(&h[..16])
}

fn git(mirror: &Path, what: &str, who: &RunAs) -> Cmd {
    Cmd::new(what, "git", GIT_TIMEOUT)
        .arg("-C")
        .arg(mirror)
        .env("HOME", &mirror.to_string_lossy())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env(
            "GIT_CONFIG_GLOBAL",
            &git_config_path(mirror).to_string_lossy(),
        )
        .cwd(mirror.parent().unwrap_or(mirror))
        .run_as(Some(who))
}

/// The global git configuration of the mirrors: a local source repository may belong to
/// another user (it is only read), and local fetches pass no command-line configuration on.
fn git_config_path(mirror: &Path) -> PathBuf {
    mirror.parent().unwrap_or(mirror).join("gitconfig")
}

fn write_git_config(git_dir: &Path) -> Result<(), AgentError> {
    let p = git_dir.join("gitconfig");
    std::fs::write(&p, "[safe]\n\tdirectory = *\n")
        .map_err(|e| AgentError::io(format!("write {}", p.display()), e))
}

/// Fetches the ref into the mirror (skipped for a commit already there) and returns the
/// commit and its tree.
async fn git_resolve(
    mirror: &Path,
    url: &str,
    git_ref: &str,
    who: &RunAs,
) -> Result<(String, String), AgentError> {
    let log = mirror.with_extension("log");
    let _ = std::fs::remove_file(&log);
    if !mirror.join("HEAD").exists() {
        let _ = std::fs::remove_dir_all(mirror);
        Cmd::new("git init", "git", GIT_TIMEOUT)
            .args(["init", "--bare", "--quiet"])
            .arg(mirror)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .cwd(mirror.parent().unwrap_or(mirror))
            .run_as(Some(who))
            .run_logged(&log)
            .await?;
    }
    let local = if git_ref == "HEAD" {
        "refs/blocklab/HEAD"
    } else {
        git_ref
    };
    let rev = |r: &str| {
        git(mirror, "git rev-parse", who)
            .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
            .arg(r)
    };
    let is_sha = git_ref.len() == 40 && git_ref.chars().all(|c| c.is_ascii_hexdigit());
    let known = is_sha && rev(&format!("{git_ref}^{{commit}}")).output().await.is_ok();
    if !known {
        git(mirror, "git fetch", who)
            .args([
                "fetch",
                "--quiet",
                "--force",
                "--prune",
                "--no-write-fetch-head",
            ])
            .arg("--end-of-options")
            .arg(url)
            .args([
                "+HEAD:refs/blocklab/HEAD",
                "+refs/heads/*:refs/heads/*",
                "+refs/tags/*:refs/tags/*",
            ])
            .run_logged(&log)
            .await?;
    }
    let commit = rev(&format!("{local}^{{commit}}"))
        .output()
        .await
        .map_err(|_| AgentError::SourceMissing {
            path: PathBuf::from(url),
            reason: format!("ref {git_ref:?} not found in the repository"),
        })?;
    let commit = commit.trim().to_string();
    let tree = rev(&format!("{commit}^{{tree}}")).output().await?;
    Ok((commit, tree.trim().to_string()))
}

/// Downloads `url` once into `downloads/<sha256>/<file name>`, checking the digest while
/// streaming; a mismatch leaves nothing behind.
async fn download_cached(
    cache: &Path,
    url: &str,
    sha256: &str,
    progress: Option<&ProgressSink>,
) -> Result<PathBuf, AgentError> {
    let dir = cache.join("downloads").join(sha256);
    create_dir_0755(&dir)?;
    let _lock = lock_file(cache.join("downloads").join(format!("{sha256}.lock"))).await?;
    let name: String = url
        .split(['?', '#'])
        .next()
        .and_then(|u| u.rsplit('/').next())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || "._-".contains(*c))
        .collect();
    let name = if name.is_empty() || name.starts_with('.') {
        "source.tar".to_string()
    } else {
        name
    };
    let file = dir.join(&name);
    if file.is_file() && sha256_file(&file).await? == sha256 {
        tracing::info!(url, "reusing downloaded tarball");
        return Ok(file);
    }
    if let Some(p) = progress {
        p.stage(
            blocklab_spec::Stage::Building,
            &format!("downloading {url}"),
        )
        .await;
    }
    let part = dir.join(format!("{name}.part"));
    let (u, p) = (url.to_string(), part.clone());
    let got = tokio::task::spawn_blocking(move || fetch_to(&u, &p))
        .await
        .map_err(|e| AgentError::Other(format!("download task panicked: {e}")))?;
    let actual = match got {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            let _ = std::fs::remove_dir(&dir); // only if empty
            return Err(e);
        }
    };
    if actual != sha256 {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(AgentError::ChecksumMismatch {
            what: url.to_string(),
            expected: sha256.to_string(),
            actual,
        });
    }
    std::fs::rename(&part, &file).map_err(|e| AgentError::io("rename download", e))?;
    Ok(file)
}

/// Blocking GET into `dest`; returns the sha256 of what was written.
fn fetch_to(url: &str, dest: &Path) -> Result<String, AgentError> {
    let fail = |reason: String| AgentError::Download {
        url: url.to_string(),
        reason,
    };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(DOWNLOAD_TIMEOUT))
        .timeout_connect(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent.get(url).call().map_err(|e| fail(e.to_string()))?;
    let status = resp.status();
    if status == 404 || status == 410 {
        return Err(fail(format!("not found (HTTP {})", status.as_u16())));
    }
    if !status.is_success() {
        return Err(fail(format!("HTTP {status}")));
    }
    let mut body = resp.into_body();
    let mut reader = body.with_config().limit(MAX_DOWNLOAD_BYTES).reader();
    let mut out = std::fs::File::create(dest)
        .map_err(|e| AgentError::io(format!("create {}", dest.display()), e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).map_err(|e| fail(e.to_string()))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        out.write_all(&buf[..n])
            .map_err(|e| AgentError::io(format!("write {}", dest.display()), e))?;
    }
    out.sync_all()
        .map_err(|e| AgentError::io(format!("sync {}", dest.display()), e))?;
    Ok(hex::encode(h.finalize()))
}

/// Unpacks `archive` into `sources/<digest>/` unless a checked tree is already there.
async fn unpack_cached(
    cache: &Path,
    digest: &str,
    what: &str,
    archive: &Path,
    git_commit: Option<String>,
    hint: String,
    who: &RunAs,
) -> Result<SourceTree, AgentError> {
    let sources = cache.join("sources");
    own_dir(&sources, who)?;
    let dir = sources.join(digest);
    let _lock = lock_file(sources.join(format!("{digest}.lock"))).await?;
    let marker_path = dir.join(SOURCE_MARKER);
    let marker: Option<SourceMarker> = std::fs::read_to_string(&marker_path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let marker = match marker {
        Some(m) => m,
        None => {
            let _ = std::fs::remove_dir_all(&dir);
            own_dir(&dir, who)?;
            let log = sources.join(format!("{digest}.unpack.log"));
            let _ = std::fs::remove_file(&log);
            let res = Cmd::new("unpack", "tar", UNPACK_TIMEOUT)
                .args(["--no-same-owner", "--force-local", "-xf"])
                .arg(archive)
                .arg("-C")
                .arg(&dir)
                .cwd(&dir)
                .run_as(Some(who))
                .run_logged(&log)
                .await
                .and_then(|()| check_tree(&dir, what));
            let m = match res {
                Ok(m) => m,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(e);
                }
            };
            let json = serde_json::to_string(&m)
                .map_err(|e| AgentError::Other(format!("encode source marker: {e}")))?;
            std::fs::write(&marker_path, json)
                .map_err(|e| AgentError::io("write source marker", e))?;
            m
        }
    };
    Ok(SourceTree {
        dir: dir.join(&marker.top),
        digest: digest.to_string(),
        version: marker.version,
        version_hint: hint,
        git_commit,
    })
}

/// Finds the top directory with `configure` and `src/include/pg_config.h.in` and reads the
/// version from `configure`.
fn check_tree(dir: &Path, what: &str) -> Result<SourceMarker, AgentError> {
    let not_pg = |reason: String| AgentError::NotPostgres {
        what: what.to_string(),
        reason,
    };
    let mut candidates = vec![PathBuf::new()];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                candidates.push(PathBuf::from(e.file_name()));
            }
        }
    }
    let top = candidates
        .into_iter()
        .find(|c| dir.join(c).join("configure").is_file())
        .ok_or_else(|| not_pg("no configure script at its top level".into()))?;
    let root = dir.join(&top);
    if !root.join("src/include/pg_config.h.in").is_file() {
        return Err(not_pg("no src/include/pg_config.h.in".into()));
    }
    let configure = std::fs::read_to_string(root.join("configure"))
        .map_err(|e| AgentError::io("read configure", e))?;
    let version = configure
        .lines()
        .find_map(|l| l.strip_prefix("PACKAGE_VERSION='"))
        .and_then(|v| v.strip_suffix('\''))
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.'))
        .ok_or_else(|| not_pg("configure has no PACKAGE_VERSION".into()))?;
    Ok(SourceMarker {
        top: top.to_string_lossy().into_owned(),
        version: version.to_string(),
    })
}
