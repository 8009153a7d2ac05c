//! PostgreSQL sources: a local tarball, a downloaded tarball (cached under
//! `build_cache/downloads/<sha256>/`, fetched by the agent and checked against its digest), or
//! a git ref (a mirror under `build_cache/git/<hash of url>/`, the builds user's, exported with
//! `git archive` into the build's own directory). A source is unpacked by the builds user into
//! the directory of the build that needs it, never into a tree another build could change;
//! the agent records what it found there (top directory, version) in
//! `build_cache/sources/<digest>.json`, so a cached build is found without unpacking again.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use blocklab_daemon::fleet::ProgressSink;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::install::open_dir_beneath;
use crate::error::AgentError;
use crate::fsutil::{create_dir_0755, lock_file, sha256_file};
use crate::options::{Source, check_tarball};
use crate::process::{Cmd, RunAs};
use crate::users::own_dir;

const UNPACK_TIMEOUT: Duration = Duration::from_secs(5 * 60);
const GIT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(30 * 60);
const MAX_DOWNLOAD_BYTES: u64 = 4 << 30;
/// `configure` is read up to this many bytes for its version.
const MAX_CONFIGURE_BYTES: u64 = 16 << 20;

/// A fetched source, not yet unpacked.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// sha256 of the tarball; for git, sha256 of `git-tree:<tree id>`.
    pub digest: String,
    /// How errors name it.
    pub what: String,
    /// The tarball (`None` for git: exported into the build's directory when needed).
    archive: Option<PathBuf>,
    /// The mirror and commit of a git source.
    git: Option<(PathBuf, String)>,
}

impl Fetched {
    /// The family whose builds share compiled objects (see `objects`).
    pub fn family(&self) -> String {
        super::objects::family(&self.digest, self.git.as_ref().map(|(m, _)| m.as_path()))
    }

    pub fn git_commit(&self) -> Option<String> {
        self.git.as_ref().map(|(_, c)| c.clone())
    }
}

/// What the agent found in a source when it was first unpacked.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SourceInfo {
    /// The directory holding `configure`, relative to where it was unpacked.
    pub top: String,
    /// `PACKAGE_VERSION` from `configure`, e.g. `15.18`; also the readable part of the key.
    pub version: String,
}

/// Fetches `source` (a tarball is only hashed; a URL is downloaded once; a git ref is fetched
/// into its mirror as `builder`).
pub async fn fetch(
    cache: &Path,
    source: &Source,
    builder: &RunAs,
    progress: Option<&ProgressSink>,
) -> Result<Fetched, AgentError> {
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
            Ok(Fetched {
                digest,
                what: source.describe(),
                archive: Some(path.clone()),
                git: None,
            })
        }
        Source::Url { url, sha256 } => {
            let file = download_cached(cache, url, sha256, progress).await?;
            Ok(Fetched {
                digest: sha256.clone(),
                what: url.clone(),
                archive: Some(file),
                git: None,
            })
        }
        Source::Git { url, git_ref } => {
            if let Some(p) = progress {
                p.stage(
                    blocklab_spec::Stage::Building,
                    &format!("fetching {url} {git_ref}"),
                )
                .await;
            }
            let git_dir = cache.join("git");
            create_dir_0755(&git_dir)?;
            write_git_config(&git_dir)?;
            let mirror = git_mirror_dir(cache, url);
            let _lock = lock_file(mirror.with_extension("lock")).await?;
            let (commit, tree) = git_resolve(&mirror, url, git_ref, builder).await?;
            Ok(Fetched {
                digest: hex::encode(Sha256::digest(format!("git-tree:{tree}"))),
                what: format!("{url} at {git_ref} ({commit})"),
                archive: None,
                git: Some((mirror, commit)),
            })
        }
    }
}

/// What the agent recorded of this source when it was last unpacked (`None`: never, or the
/// record does not parse).
pub fn known(cache: &Path, digest: &str) -> Option<SourceInfo> {
    let text = std::fs::read_to_string(info_path(cache, digest)).ok()?;
    serde_json::from_str(&text).ok()
}

fn info_path(cache: &Path, digest: &str) -> PathBuf {
    cache.join("sources").join(format!("{digest}.json"))
}

/// Unpacks the source as `builder` into `<build_dir>/src` (a git source is exported into
/// `build_dir` first), checks it is a PostgreSQL tree and records what it found. Returns the
/// directory holding `configure` and the record.
pub async fn unpack(
    cache: &Path,
    fetched: &Fetched,
    build_dir: &Path,
    builder: &RunAs,
) -> Result<(PathBuf, SourceInfo), AgentError> {
    let sources = cache.join("sources");
    create_dir_0755(&sources)?;
    let log = sources.join(format!("{}.unpack.log", fetched.digest));
    let _ = std::fs::remove_file(&log);
    let archive = match (&fetched.archive, &fetched.git) {
        (Some(a), _) => a.clone(),
        (None, Some((mirror, commit))) => {
            let exported = build_dir.join("source.tar");
            git(mirror, "git archive", builder)
                .args(["archive", "--format=tar", "--prefix=postgresql/", "-o"])
                .arg(&exported)
                .arg(commit)
                .run_logged(&mirror.with_extension("log"))
                .await?;
            exported
        }
        (None, None) => return Err(AgentError::Other("a source with nothing to unpack".into())),
    };
    let dir = build_dir.join("src");
    own_dir(&dir, builder)?;
    Cmd::new("unpack", "tar", UNPACK_TIMEOUT)
        .args([
            "--no-same-owner",
            "--no-same-permissions",
            "--force-local",
            "-xf",
        ])
        .arg(&archive)
        .arg("-C")
        .arg(&dir)
        .cwd(&dir)
        .env("HOME", &build_dir.to_string_lossy())
        .run_as(Some(builder))
        .run_logged(&log)
        .await?;
    if fetched.git.is_some() {
        let _ = std::fs::remove_file(&archive);
    }
    let info = check_tree(&dir, &fetched.what)?;
    let json = serde_json::to_string(&info)
        .map_err(|e| AgentError::Other(format!("encode source record: {e}")))?;
    let path = info_path(cache, &fetched.digest);
    let tmp = path.with_extension(format!("{}.tmp", uuid::Uuid::new_v4()));
    std::fs::write(&tmp, json)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| AgentError::io("write source record", e))?;
    Ok((dir.join(&info.top), info))
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
        // The git directory is the agent's; the mirror in it the builds user's.
        let _ = std::fs::remove_dir_all(mirror);
        own_dir(mirror, who)?;
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

/// Finds the top directory with `configure` and `src/include/pg_config.h.in` and reads the
/// version from `configure`.
fn check_tree(dir: &Path, what: &str) -> Result<SourceInfo, AgentError> {
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
    // The tree is the builds user's: `configure` is read without following a link, through
    // the directory the check found (never a link swapped in on the way).
    let top_fd = open_dir_beneath(dir, &top)?;
    let fd = nix::fcntl::openat(
        &top_fd,
        "configure",
        nix::fcntl::OFlag::O_RDONLY
            | nix::fcntl::OFlag::O_NOFOLLOW
            | nix::fcntl::OFlag::O_NONBLOCK
            | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| AgentError::io("open configure", e.into()))?;
    let mut configure = String::new();
    std::fs::File::from(fd)
        .take(MAX_CONFIGURE_BYTES)
        .read_to_string(&mut configure)
        .map_err(|e| AgentError::io("read configure", e))?;
    let version = configure
        .lines()
        .find_map(|l| l.strip_prefix("PACKAGE_VERSION='"))
        .and_then(|v| v.strip_suffix('\''))
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '.'))
        .ok_or_else(|| not_pg("configure has no PACKAGE_VERSION".into()))?;
    Ok(SourceInfo {
        top: top.to_string_lossy().into_owned(),
        version: version.to_string(),
    })
}
