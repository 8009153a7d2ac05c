//! `io_method` (PostgreSQL 18's asynchronous I/O) judged against what the build is: the
//! setting exists from 18 on, and `io_uring` only in a build configured `--with-liburing`.
//! Both facts come from the build's own `pg_config`, so the refusal names what is missing
//! instead of the server's "invalid value".

use std::path::Path;
use std::time::Duration;

use crate::error::AgentError;
use crate::options::major_version;
use crate::process::{Cmd, RunAs};

const PG_CONFIG_TIMEOUT: Duration = Duration::from_secs(30);

/// The setting this module judges.
pub const IO_METHOD: &str = "io_method";

/// What `pg_config` says of a build: its version (`18.6`) and its configure arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildFacts {
    pub version: String,
    pub configure: String,
}

/// Asks the build at `install` (`bin/pg_config --version`, `--configure`).
pub async fn facts(install: &Path, run_as: &RunAs, cwd: &Path) -> Result<BuildFacts, AgentError> {
    let pg_config = install.join("bin/pg_config");
    let ask = |what: &'static str, arg: &'static str| {
        Cmd::new(what, &pg_config, PG_CONFIG_TIMEOUT)
            .arg(arg)
            .cwd(cwd)
            .env("HOME", &cwd.to_string_lossy())
            .run_as(Some(run_as))
    };
    let version = ask("pg_config --version", "--version").output().await?;
    let configure = ask("pg_config --configure", "--configure").output().await?;
    Ok(BuildFacts {
        version: version
            .trim()
            .trim_start_matches("PostgreSQL")
            .trim()
            .to_string(),
        configure: configure.trim().to_string(),
    })
}

/// Why the build described by `facts` cannot run `io_method = value` (`None`: it can, as
/// far as the build goes; the value itself is judged by the build's catalog and parser).
pub fn problem(value: &str, facts: &BuildFacts) -> Option<String> {
    if major_version(&facts.version) < 18 {
        return Some(format!(
            "io_method needs PostgreSQL 18; this build is PostgreSQL {}",
            facts.version
        ));
    }
    let with_liburing = facts
        .configure
        .split('\'')
        .any(|arg| arg.trim() == "--with-liburing");
    if value.trim().eq_ignore_ascii_case("io_uring") && !with_liburing {
        return Some(
            "io_uring needs a build configured --with-liburing, and this build's \
             pg_config --configure lacks it (add \"--with-liburing\" to the source's \
             configure, with liburing's development files on the database host)"
                .into(),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(version: &str, configure: &str) -> BuildFacts {
        BuildFacts {
            version: version.into(),
            configure: configure.into(),
        }
    }

    #[test]
    fn io_method_needs_18_and_io_uring_needs_liburing() {
        let old = problem("worker", &facts("15.18", "'--with-blocksize=8'")).unwrap();
        assert_eq!(
            old,
            "io_method needs PostgreSQL 18; this build is PostgreSQL 15.18"
        );
        assert!(problem("sync", &facts("17.12", "")).is_some());
        let plain = facts(
            "18.6",
            "'--prefix=/x' '--with-blocksize=16' '--without-icu'",
        );
        assert_eq!(problem("worker", &plain), None);
        assert_eq!(problem("sync", &plain), None);
        let why = problem("io_uring", &plain).unwrap();
        assert!(why.contains("--with-liburing"), "{why}");
        assert!(why.contains("pg_config --configure lacks it"), "{why}");
        let uring = facts("18.6", "'--prefix=/x' '--with-liburing' '--without-icu'");
        assert_eq!(problem("io_uring", &uring), None);
        // A flag that merely starts alike is not the flag.
        assert!(problem("io_uring", &facts("18.6", "'--with-liburing-x'")).is_some());
        assert_eq!(major_version("18beta1"), 18);
    }
}
