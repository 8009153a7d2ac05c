//! The sources an agent builds (`--allow-source`): with none given it builds any source a
//! task names; with some, only those. An entry is an absolute path (a tarball, or a directory
//! whose tarballs are all allowed), an `http://` or `https://` URL, or `git:` followed by a
//! repository URL. Links are resolved before a path is compared, so a link cannot lead a
//! build out of an allowed directory.

use std::path::{Path, PathBuf};

use crate::error::AgentError;
use crate::options::Source;

/// The agent's allowed sources; empty allows every source.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllowedSources {
    paths: Vec<PathBuf>,
    urls: Vec<String>,
    git: Vec<String>,
}

impl AllowedSources {
    /// Parses the `--allow-source` entries, naming a bad one.
    pub fn parse(entries: &[String]) -> Result<Self, AgentError> {
        let mut out = Self::default();
        for e in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            if e.starts_with("git://") {
                out.git.push(e.to_string());
            } else if let Some(remote) = e.strip_prefix("git:") {
                out.git.push(remote.to_string());
            } else if e.starts_with("http://") || e.starts_with("https://") {
                out.urls.push(e.to_string());
            } else if Path::new(e).is_absolute() {
                out.paths.push(PathBuf::from(e));
            } else {
                return Err(AgentError::invalid(
                    "--allow-source",
                    format!(
                        "{e:?}: an absolute path (a tarball or a directory of tarballs), an \
                         http(s) URL, or git:REPOSITORY"
                    ),
                ));
            }
        }
        Ok(out)
    }

    pub fn is_open(&self) -> bool {
        self.paths.is_empty() && self.urls.is_empty() && self.git.is_empty()
    }

    /// Refuses `source` unless it is allowed.
    pub fn check(&self, source: &Source) -> Result<(), AgentError> {
        if self.is_open() {
            return Ok(());
        }
        let allowed = match source {
            Source::Tarball { path, .. } => {
                let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                self.paths.iter().any(|p| {
                    let p = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
                    real == p || (p.is_dir() && real.starts_with(&p))
                })
            }
            Source::Url { url, .. } => self.urls.iter().any(|u| u == url),
            Source::Git { url, .. } => self.git.iter().any(|g| g == url),
        };
        if allowed {
            return Ok(());
        }
        let named = match source {
            Source::Tarball { path, .. } => path.display().to_string(),
            Source::Url { url, .. } => url.clone(),
            Source::Git { url, .. } => format!("git:{url}"),
        };
        Err(AgentError::invalid(
            "source",
            format!("{named} is not among the sources this agent builds (its --allow-source)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_sources_are_built_once_a_list_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let releases = dir.path().join("releases");
        std::fs::create_dir(&releases).unwrap();
        let tarball = releases.join("postgresql-15.tar.bz2");
        std::fs::write(&tarball, "x").unwrap();
        let other = dir.path().join("mine.tar.bz2");
        std::fs::write(&other, "y").unwrap();
        // A link inside the allowed directory that leads out of it.
        std::os::unix::fs::symlink(&other, releases.join("sneaky.tar.bz2")).unwrap();

        let tar = |p: &Path| Source::Tarball {
            path: p.to_path_buf(),
            sha256: None,
        };
        assert!(AllowedSources::default().check(&tar(&other)).is_ok());

        let allowed = AllowedSources::parse(&[
            releases.display().to_string(),
            "https://ftp.postgresql.org/pub/source/v17.6/postgresql-17.6.tar.bz2".into(),
            "git:https://git.postgresql.org/git/postgresql.git".into(),
            "git://git.example/pg.git".into(),
        ])
        .unwrap();
        assert!(allowed.check(&tar(&tarball)).is_ok());
        for refused in [other.clone(), releases.join("sneaky.tar.bz2")] {
            let e = allowed.check(&tar(&refused)).unwrap_err().to_string();
            assert!(
                e.contains("is not among the sources this agent builds"),
                "{e}"
            );
        }
        let url = |u: &str| Source::Url {
            url: u.into(),
            sha256: "0".repeat(64),
        };
        assert!(
            allowed
                .check(&url(
                    "https://ftp.postgresql.org/pub/source/v17.6/postgresql-17.6.tar.bz2"
                ))
                .is_ok()
        );
        assert!(
            allowed
                .check(&url("https://evil.example/pg.tar.bz2"))
                .is_err()
        );
        let git = |u: &str| Source::Git {
            url: u.into(),
            git_ref: "master".into(),
        };
        assert!(
            allowed
                .check(&git("https://git.postgresql.org/git/postgresql.git"))
                .is_ok()
        );
        assert!(allowed.check(&git("git://git.example/pg.git")).is_ok());
        let e = allowed
            .check(&git("https://evil.example/pg.git"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("git:https://evil.example/pg.git"), "{e}");

        let e = AllowedSources::parse(&["releases/".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--allow-source"), "{e}");
    }
}
