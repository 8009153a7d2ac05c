//! Daemon configuration files: one TOML file per daemon (`--config FILE`) whose keys are the
//! daemon's long flags in snake_case (`heartbeat_interval` for `--heartbeat-interval`).
//! A flag or its environment variable beats the file, the file beats the default. Unknown
//! keys are refused with the key named. `--print-default-config` prints a commented TOML
//! file of every key with its default, which parses back to the defaults.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

/// The id of the `--config FILE` argument every daemon has.
pub const CONFIG_ARG: &str = "config";
/// The id of the `--print-default-config` flag every daemon has.
pub const PRINT_ARG: &str = "print_default_config";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("--config {}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--config {}: not valid TOML: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    #[error("--config {}: unknown key `{key}` (allowed: {allowed})", path.display())]
    UnknownKey {
        path: PathBuf,
        key: String,
        allowed: String,
    },
    #[error("--config {}: key `{key}`: {message}", path.display())]
    Value {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("--config {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Clap(#[from] clap::Error),
}

fn is_meta(id: &str) -> bool {
    matches!(id, "help" | "version" | CONFIG_ARG | PRINT_ARG)
}

fn keys(cmd: &Command) -> Vec<&clap::Arg> {
    cmd.get_arguments()
        .filter(|a| !is_meta(a.get_id().as_str()) && a.get_long().is_some())
        .collect()
}

fn scalar(path: &Path, key: &str, v: &toml::Value) -> Result<String, ConfigError> {
    match v {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(f) => Ok(f.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(ConfigError::Value {
            path: path.into(),
            key: key.into(),
            message: format!(
                "expected a string, number or boolean, not {}",
                other.type_str()
            ),
        }),
    }
}

/// Flags (`--long value`) for the file's keys that neither a flag nor a variable set.
fn file_args(cmd: &Command, m: &ArgMatches, path: &Path) -> Result<Vec<OsString>, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.into(),
        source,
    })?;
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Syntax {
            path: path.into(),
            message: e.message().to_string(),
        })?;
    let args = keys(cmd);
    let mut out = Vec::new();
    for (key, value) in &table {
        let Some(arg) = args.iter().find(|a| a.get_id().as_str() == key.as_str()) else {
            let allowed: Vec<&str> = args.iter().map(|a| a.get_id().as_str()).collect();
            return Err(ConfigError::UnknownKey {
                path: path.into(),
                key: key.clone(),
                allowed: allowed.join(", "),
            });
        };
        if matches!(
            m.value_source(key),
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let flag = format!("--{}", arg.get_long().unwrap_or(key));
        if !arg.get_action().takes_values() {
            match value {
                toml::Value::Boolean(true) => out.push(flag.into()),
                toml::Value::Boolean(false) => {}
                _ => {
                    return Err(ConfigError::Value {
                        path: path.into(),
                        key: key.clone(),
                        message: "expected true or false".into(),
                    });
                }
            }
            continue;
        }
        let values = match value {
            toml::Value::Array(items) => items
                .iter()
                .map(|v| scalar(path, key, v))
                .collect::<Result<Vec<_>, _>>()?,
            v => vec![scalar(path, key, v)?],
        };
        for v in values {
            out.push(format!("{flag}={v}").into());
        }
    }
    Ok(out)
}

/// Parses `argv` as `P`, filling what flags and variables left unset from `--config FILE`.
/// With `subcommand`, the config flags belong to that subcommand (e.g. the worker's `serve`).
/// `--print-default-config` prints [`default_config`] and exits.
pub fn parse_with_config<P: clap::Parser>(
    argv: Vec<OsString>,
    subcommand: Option<&str>,
) -> Result<P, ConfigError> {
    let cmd = P::command();
    let m = cmd.clone().try_get_matches_from(&argv)?;
    let (target_cmd, target_m) = match subcommand {
        Some(name) => match (cmd.find_subcommand(name), m.subcommand_matches(name)) {
            (Some(c), Some(sm)) => (
                c.clone().bin_name(format!("{} {name}", cmd.get_name())),
                sm.clone(),
            ),
            _ => return Ok(P::from_arg_matches(&m)?),
        },
        None => (cmd.clone(), m.clone()),
    };
    if target_m.try_get_one::<bool>(PRINT_ARG).ok().flatten() == Some(&true) {
        print!("{}", default_config(&target_cmd));
        std::process::exit(0);
    }
    let Some(path) = target_m
        .try_get_one::<PathBuf>(CONFIG_ARG)
        .ok()
        .flatten()
        .cloned()
    else {
        return Ok(P::from_arg_matches(&m)?);
    };
    let extra = file_args(&target_cmd, &target_m, &path)?;
    let mut argv = argv;
    match subcommand {
        // Top-level flags go right after the binary's name, before any subcommand
        // (`blocklab-coordinator --config FILE hosts list`).
        None => {
            let at = argv.len().min(1);
            argv.splice(at..at, extra);
        }
        Some(_) => argv.extend(extra),
    }
    P::try_parse_from(&argv).map_err(|e| ConfigError::Invalid {
        path,
        message: e.render().to_string().trim_end().to_string(),
    })
}

fn toml_value(arg: &clap::Arg, v: &str) -> String {
    if !arg.get_action().takes_values() {
        return v.to_string();
    }
    match v.parse::<i64>() {
        Ok(n) if n.to_string() == v => v.to_string(),
        _ => toml::Value::String(v.to_string()).to_string(),
    }
}

/// Checks a daemon's config handling, for its tests: the default config written by
/// `default_config` parses back to exactly the arguments of no config at all, and an unknown
/// key is refused naming it. `argv0` is the binary name and, for a subcommand, its name.
pub fn check_default_config<P: clap::Parser + std::fmt::Debug>(
    argv0: &[&str],
    subcommand: Option<&str>,
) -> Result<(), String> {
    let mut cmd = P::command();
    if let Some(sub) = subcommand {
        cmd = cmd
            .find_subcommand(sub)
            .ok_or_else(|| format!("no subcommand {sub}"))?
            .clone();
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path = std::env::temp_dir().join(format!(
        "blocklab-config-check-{}-{nanos}.toml",
        std::process::id()
    ));
    let argv =
        |extra: &[&str]| -> Vec<OsString> { argv0.iter().chain(extra).map(Into::into).collect() };
    let with_file = argv(&["--config", &path.display().to_string()]);
    let result = (|| {
        std::fs::write(&path, default_config(&cmd)).map_err(|e| e.to_string())?;
        let with: P = parse_with_config(with_file.clone(), subcommand)
            .map_err(|e| format!("the default config does not parse: {e}"))?;
        let without: P = parse_with_config(argv(&[]), subcommand).map_err(|e| e.to_string())?;
        let with = format!("{with:?}").replace(&format!("Some({path:?})"), "None");
        if with != format!("{without:?}") {
            return Err(format!(
                "the default config changes the arguments:\n{with}\n{without:?}"
            ));
        }
        std::fs::write(&path, "no_such_key = 1\n").map_err(|e| e.to_string())?;
        match parse_with_config::<P>(with_file.clone(), subcommand) {
            Err(e) if e.to_string().contains("unknown key `no_such_key`") => Ok(()),
            Err(e) => Err(format!("an unknown key gave the wrong error: {e}")),
            Ok(_) => Err("an unknown key was accepted".into()),
        }
    })();
    let _ = std::fs::remove_file(&path);
    result
}

/// A commented TOML file of every key of `cmd` with its default; keys without a default are
/// commented out.
pub fn default_config(cmd: &Command) -> String {
    let name = cmd.get_bin_name().unwrap_or(cmd.get_name());
    let mut out = format!(
        "# {name} configuration (TOML), used with --config FILE.\n\
         # Every key is also a flag (--key-name) and most an environment variable; a flag or a\n\
         # variable overrides this file. Unknown keys are refused.\n"
    );
    for arg in keys(cmd) {
        let id = arg.get_id().as_str();
        out.push('\n');
        if let Some(help) = arg.get_long_help().or(arg.get_help()) {
            for line in help.to_string().lines() {
                let _ = writeln!(out, "# {line}");
            }
        }
        let flag = format!("--{}", arg.get_long().unwrap_or(id));
        match arg.get_env() {
            Some(env) => {
                let _ = writeln!(out, "# ({flag}, ${})", env.to_string_lossy());
            }
            None => {
                let _ = writeln!(out, "# ({flag})");
            }
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let multi =
            arg.get_action().takes_values() && matches!(arg.get_action(), clap::ArgAction::Append);
        if !arg.get_action().takes_values() {
            let _ = writeln!(out, "{id} = false");
        } else if multi {
            let items: Vec<String> = defaults.iter().map(|d| toml_value(arg, d)).collect();
            let line = format!("{id} = [{}]", items.join(", "));
            if items.is_empty() {
                let _ = writeln!(out, "# {line}");
            } else {
                let _ = writeln!(out, "{line}");
            }
        } else if let Some(d) = defaults.first() {
            let _ = writeln!(out, "{id} = {}", toml_value(arg, d));
        } else {
            let _ = writeln!(out, "# {id} = \"\"");
        }
    }
    out
}

#[cfg(test)]
mod tests;

/// [`parse_with_config`] on the process's arguments; prints the error and exits with status 2
/// on a bad flag or file (and with 0 for --help and --version).
pub fn parse_or_exit<P: clap::Parser>(subcommand: Option<&str>) -> P {
    match parse_with_config(std::env::args_os().collect(), subcommand) {
        Ok(p) => p,
        Err(ConfigError::Clap(e)) => e.exit(),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    }
}
