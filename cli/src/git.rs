//! A repository's history, read where the command runs: which commits `[commits]` names
//! (`blocklab submit` lists them as a series' points) and which lie between two points
//! (`blocklab bisect`). A local repository (`file:///path` or a path) is read in place; any
//! other URL is cloned once, without file contents, into a temporary directory. git runs with
//! an argv only, without the system's configuration and without prompting.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::client::CliError;

/// A repository whose history can be read.
pub struct Repo {
    dir: PathBuf,
    /// The clone of a remote repository, removed when the `Repo` goes.
    _clone: Option<TempDir>,
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn git(dir: Option<&Path>, what: &str, args: &[&str]) -> Result<String, CliError> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    let out = cmd
        .args(["-c", "safe.directory=*"])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|e| CliError::Git {
            what: what.to_string(),
            message: format!("cannot run git: {e}"),
        })?;
    if !out.status.success() {
        return Err(CliError::Git {
            what: what.to_string(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Repo {
    /// The repository at `url`, as a spec names it.
    pub fn open(url: &str) -> Result<Repo, CliError> {
        let local = url
            .strip_prefix("file://")
            .or((!url.contains("://")).then_some(url));
        if let Some(path) = local {
            return Ok(Repo {
                dir: PathBuf::from(path),
                _clone: None,
            });
        }
        let dir = std::env::temp_dir().join(format!(
            "blocklab-history-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let clone = TempDir(dir.clone());
        let target = dir.to_string_lossy().to_string();
        git(
            None,
            &format!("clone {url}"),
            &[
                "clone",
                "--bare",
                "--quiet",
                "--filter=blob:none",
                "--end-of-options",
                url,
                &target,
            ],
        )?;
        Ok(Repo {
            dir,
            _clone: Some(clone),
        })
    }

    /// The full id of the commit `r` names (a branch, tag or commit).
    pub fn commit(&self, r: &str) -> Result<String, CliError> {
        git(
            Some(&self.dir),
            &format!("rev-parse {r}"),
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                "--end-of-options",
                &format!("{r}^{{commit}}"),
            ],
        )
        .map_err(|_| CliError::Git {
            what: format!("rev-parse {r}"),
            message: format!("{r:?} is not a commit of {}", self.dir.display()),
        })
    }

    /// The commits after `from` up to `to` on `to`'s first-parent line, oldest first (`to`
    /// last); `from` must be an ancestor of `to`.
    pub fn first_parent(&self, from: &str, to: &str) -> Result<Vec<String>, CliError> {
        let (from, to) = (self.commit(from)?, self.commit(to)?);
        let what = format!("rev-list {from}..{to}");
        let ancestor = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args([
                "-c",
                "safe.directory=*",
                "merge-base",
                "--is-ancestor",
                &from,
                &to,
            ])
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .status()
            .map_err(|e| CliError::Git {
                what: what.clone(),
                message: e.to_string(),
            })?;
        if !ancestor.success() {
            return Err(CliError::Git {
                what,
                message: format!("{from} is not an ancestor of {to}"),
            });
        }
        let range = format!("{from}..{to}");
        let list = git(
            Some(&self.dir),
            &what,
            &["rev-list", "--first-parent", "--reverse", &range],
        )?;
        Ok(list.lines().map(str::to_string).collect())
    }

    /// A commit's subject line.
    pub fn subject(&self, commit: &str) -> Result<String, CliError> {
        git(
            Some(&self.dir),
            &format!("log {commit}"),
            &["log", "-1", "--format=%s", commit, "--"],
        )
    }
}
