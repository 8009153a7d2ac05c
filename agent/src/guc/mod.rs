//! Settings judged by the build that will run them, before any run: first against the GUC
//! catalog of `postgres --describe-config` (name, group, context, type, bounds: a setting
//! the catalog does not list, or of a group no spec may set, is refused; see
//! `blocklab_spec::guc`), then by the
//! build's own configuration file parser (`postgres -D <scratch> -C block_size` over a
//! postgresql.conf holding the settings), which knows what the catalog does not print:
//! enum values, units, settings kept out of the sample file. Both run as the PostgreSQL user.
//! `io_method` is judged against the build's version and configure flags first
//! ([`io_method`]). Also: naming the setting a failed server start complains about in its log.

pub mod io_method;

use std::path::Path;
use std::time::Duration;

use crate::conf::{PgSetting, quote_setting_value, validate_setting_name};
use crate::error::AgentError;
use crate::fsutil::create_dir_0755;
use crate::process::{Cmd, RunAs};
use crate::users::chown_to;

use blocklab_spec::guc::{GucCatalog, UNLISTED_ALLOWED, judge, refused};

const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(30);

/// A setting the build does not accept, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingProblem {
    pub name: String,
    pub value: String,
    pub reason: String,
}

/// The GUC catalog of the build whose `postgres` binary is `postgres`.
pub async fn describe(
    postgres: &Path,
    run_as: &RunAs,
    cwd: &Path,
) -> Result<GucCatalog, AgentError> {
    let out = Cmd::new("postgres --describe-config", postgres, DESCRIBE_TIMEOUT)
        .arg("--describe-config")
        .cwd(cwd)
        .env("HOME", &cwd.to_string_lossy())
        .run_as(Some(run_as))
        .output()
        .await?;
    let catalog = GucCatalog::parse(&out);
    if catalog.is_empty() {
        return Err(AgentError::Other(format!(
            "{} --describe-config listed no settings",
            postgres.display()
        )));
    }
    Ok(catalog)
}

/// Every setting of `settings` that the build at `install` refuses (empty: all accepted).
/// `scratch` is a directory the agent may create and remove.
pub async fn check(
    install: &Path,
    run_as: &RunAs,
    scratch: &Path,
    settings: &[PgSetting],
) -> Result<Vec<SettingProblem>, AgentError> {
    let _ = std::fs::remove_dir_all(scratch);
    create_dir_0755(scratch)?;
    chown_to(scratch, run_as)?;
    let res = check_in(install, run_as, scratch, settings).await;
    if let Err(e) = std::fs::remove_dir_all(scratch) {
        tracing::warn!(dir = %scratch.display(), error = %e, "could not remove settings scratch dir");
    }
    res
}

async fn check_in(
    install: &Path,
    run_as: &RunAs,
    scratch: &Path,
    settings: &[PgSetting],
) -> Result<Vec<SettingProblem>, AgentError> {
    let postgres = install.join("bin/postgres");
    let catalog = describe(&postgres, run_as, scratch).await?;
    let mut problems = Vec::new();
    if let Some(s) = settings.iter().find(|s| s.name == io_method::IO_METHOD) {
        let facts = io_method::facts(install, run_as, scratch).await?;
        if let Some(reason) = io_method::problem(&s.value, &facts) {
            problems.push(SettingProblem {
                name: s.name.clone(),
                value: s.value.clone(),
                reason,
            });
        }
    }
    let mut conf = String::new();
    let problem = |s: &PgSetting, reason: String| SettingProblem {
        name: s.name.clone(),
        value: s.value.clone(),
        reason,
    };
    for s in settings {
        if problems.iter().any(|p| p.name == s.name) {
            continue;
        }
        let quoted =
            validate_setting_name(&s.name).and_then(|()| quote_setting_value(&s.name, &s.value));
        let quoted = match quoted {
            Ok(q) => q,
            Err(e) => {
                problems.push(problem(s, e.to_string()));
                continue;
            }
        };
        let guc = catalog.get(&s.name);
        let refusal = refused(&s.name, guc).or_else(|| match guc {
            Some(g) => judge(g, &s.value),
            None if UNLISTED_ALLOWED.contains(&s.name.as_str()) => None,
            None => Some(
                "is not a setting this build lists for postgresql.conf (unknown to it, \
                 internal, or a developer option)"
                    .into(),
            ),
        });
        match refusal {
            Some(reason) => problems.push(problem(s, reason)),
            None => conf.push_str(&format!("{} = {quoted}\n", s.name)),
        }
    }
    if !problems.is_empty() || conf.is_empty() {
        return Ok(problems);
    }
    let conf_path = scratch.join("postgresql.conf");
    std::fs::write(&conf_path, conf)
        .map_err(|e| AgentError::io(format!("write {}", conf_path.display()), e))?;
    let log = scratch.join("check.log");
    let parsed = Cmd::new("postgres -C", &postgres, DESCRIBE_TIMEOUT)
        .arg("-D")
        .arg(scratch)
        .args(["-C", "block_size"])
        .cwd(scratch)
        .env("HOME", &scratch.to_string_lossy())
        .run_as(Some(run_as))
        .run_logged(&log)
        .await;
    let Err(e) = parsed else {
        return Ok(problems);
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    for (name, reason) in config_errors(&text) {
        let value = settings
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value.clone())
            .unwrap_or_default();
        problems.push(SettingProblem {
            name,
            value,
            reason,
        });
    }
    if problems.is_empty() {
        return Err(e);
    }
    Ok(problems)
}

/// The message of a server log line (after `LOG:`, `FATAL:`, ...) and its level.
fn message(line: &str) -> Option<(&str, &str)> {
    ["LOG", "FATAL", "PANIC", "ERROR", "HINT", "DETAIL"]
        .into_iter()
        .find_map(|level| {
            let tag = format!("{level}:  ");
            line.find(&tag)
                .map(|i| (level, line[i + tag.len()..].trim_end()))
        })
}

/// `parameter "NAME"` in a message.
fn parameter_named(msg: &str) -> Option<&str> {
    let start = msg.find("parameter \"")? + "parameter \"".len();
    let len = msg[start..].find('"')?;
    Some(&msg[start..start + len])
}

/// The settings a server log complains about, each with the complaint (and its hint),
/// without the file position.
pub fn config_errors(log: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut last_named = false;
    for line in log.lines() {
        let Some((level, msg)) = message(line) else {
            continue;
        };
        if level == "HINT" || level == "DETAIL" {
            if last_named && let Some((_, reason)) = out.last_mut() {
                reason.push_str(&format!(" ({msg})"));
            }
            continue;
        }
        last_named = false;
        if let Some(name) = parameter_named(msg) {
            let msg = msg.split(" in file \"").next().unwrap_or(msg);
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.to_string(), msg.to_string()));
                last_named = true;
            }
        }
    }
    out
}

/// What a failed server start's log says went wrong: the settings it names, else its first
/// FATAL or PANIC message.
pub fn start_failure_cause(log: &str) -> Option<String> {
    let named = config_errors(log);
    if !named.is_empty() {
        let parts: Vec<String> = named.into_iter().map(|(_, m)| m).collect();
        return Some(parts.join("; "));
    }
    log.lines()
        .filter_map(message)
        .find(|(level, _)| *level == "FATAL" || *level == "PANIC")
        .map(|(_, m)| m.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
2026-12-01 14:19:10.496 GMT [32450] LOG:  skipping missing configuration file \"/tmp/x/postgresql.auto.conf\"
2026-12-01 14:19:10.496 GMT [32450] LOG:  invalid value for parameter \"wal_level\": \"bogus\"
2026-12-01 14:19:10.496 GMT [32450] HINT:  Available values: minimal, replica, logical.
2026-12-01 14:19:10.496 GMT [32450] LOG:  invalid value for parameter \"max_connections\": \"10MB\"
2026-12-01 14:19:10.496 GMT [32450] LOG:  unrecognized configuration parameter \"nosuch\" in file \"/tmp/x/postgresql.conf\" line 4
2026-12-01 14:19:10.496 GMT [32450] FATAL:  configuration file \"/tmp/x/postgresql.conf\" contains errors
";

    #[test]
    fn log_names_the_settings() {
        assert_eq!(
            config_errors(LOG),
            [
                (
                    "wal_level".to_string(),
                    "invalid value for parameter \"wal_level\": \"bogus\" (Available values: minimal, replica, logical.)".to_string()
                ),
                (
                    "max_connections".to_string(),
                    "invalid value for parameter \"max_connections\": \"10MB\"".to_string()
                ),
                (
                    "nosuch".to_string(),
                    "unrecognized configuration parameter \"nosuch\"".to_string()
                ),
            ]
        );
        let cause = start_failure_cause(LOG).unwrap();
        assert!(
            cause.starts_with("invalid value for parameter \"wal_level\""),
            "{cause}"
        );
        let other = "x [1] LOG:  starting\nx [1] FATAL:  could not create shared memory segment: No space left\n";
        assert_eq!(
            start_failure_cause(other).as_deref(),
            Some("could not create shared memory segment: No space left")
        );
        assert_eq!(start_failure_cause("x [1] LOG:  fine\n"), None);
    }
}
