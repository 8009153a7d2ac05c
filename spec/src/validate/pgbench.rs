//! pgbench's options of a `[workload]`: the scripts (files sent with the submission, checked
//! with the script parser), `-D` variables, rate, latency limit, retries, `-C`, `-t`, the
//! seed, `-r`; and `init` / `[workload.init]`, how each run's database gets its data.

use std::time::Duration;

use blocklab_script::parse::parse_script;
use blocklab_script::vars::{Symbols, valid_name};

use super::field::parse_duration;
use crate::error::SpecError;
use crate::limits::{BUILTINS, MAX_INIT_SQL_BYTES, MAX_SCRIPT_BYTES, MAX_SCRIPTS};
use crate::raw::{RawScript, RawWorkload};
use crate::script::{
    DataInit, Files, PgbenchInit, PgbenchOptions, ScriptSource, UserFile, WeightedScript,
};

fn err(prefix: &str, key: &str, message: impl Into<String>) -> SpecError {
    SpecError::new(format!("{prefix}.{key}"), message)
}

/// The file `name` of `field` as the submission sent it, at most `limit` bytes.
pub(super) fn sent_file(
    field: &str,
    name: &str,
    files: &Files,
    limit: usize,
) -> Result<UserFile, SpecError> {
    if name.trim().is_empty() || name.contains('\0') {
        return Err(SpecError::new(field, "names no file"));
    }
    let text = files.get(name).ok_or_else(|| {
        SpecError::new(
            field,
            format!(
                "{name:?} was not sent with the submission (the files field holds {})",
                if files.is_empty() {
                    "none".to_string()
                } else {
                    files
                        .keys()
                        .map(|k| format!("{k:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            ),
        )
    })?;
    if text.len() > limit {
        return Err(SpecError::new(
            field,
            format!(
                "{name:?} is {} bytes, more than the limit of {limit}",
                text.len()
            ),
        ));
    }
    Ok(UserFile::new(name, text))
}

fn script(
    field: &str,
    s: &RawScript,
    files: &Files,
    symbols: &mut Symbols,
) -> Result<WeightedScript, SpecError> {
    let weight = s.weight.unwrap_or(1);
    if !(1..=1_000_000).contains(&weight) {
        return Err(SpecError::new(
            format!("{field}.weight"),
            "must be between 1 and 1000000",
        ));
    }
    let source = match (&s.file, &s.builtin) {
        (Some(name), None) => {
            let field = format!("{field}.file");
            let f = sent_file(&field, name, files, MAX_SCRIPT_BYTES)?;
            let parsed = parse_script(&f.name, &f.text, symbols)
                .map_err(|e| SpecError::new(&field, e.to_string()))?;
            if parsed.steps.is_empty() {
                return Err(SpecError::new(field, format!("{name:?} has no command")));
            }
            if let Some(line) = parsed.uses_shell() {
                return Err(SpecError::new(
                    field,
                    format!("{name}:{line}: \\shell and \\setshell are not run by the fleet"),
                ));
            }
            ScriptSource::File(f)
        }
        (None, Some(b)) if BUILTINS.contains(&b.as_str()) => ScriptSource::Builtin(b.clone()),
        (None, Some(b)) => {
            return Err(SpecError::new(
                format!("{field}.builtin"),
                format!(
                    "{b:?} is not a built-in; use one of {}",
                    BUILTINS.join(", ")
                ),
            ));
        }
        _ => {
            return Err(SpecError::new(
                field,
                "give either file = \"path\" or builtin = \"name\"",
            ));
        }
    };
    Ok(WeightedScript { source, weight })
}

fn variables(prefix: &str, w: &RawWorkload) -> Result<Vec<(String, String)>, SpecError> {
    let mut out = Vec::new();
    for (name, v) in w.variables.iter().flatten() {
        let field = format!("{prefix}.variables.{name}");
        if !valid_name(name) {
            return Err(SpecError::new(field, "is not a valid variable name"));
        }
        if name == "client_id" {
            return Err(SpecError::new(field, "is set by each client itself"));
        }
        let text = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            _ => {
                return Err(SpecError::new(
                    field,
                    "must be a string, a number or a boolean",
                ));
            }
        };
        if text.len() > 4096 || text.contains('\0') {
            return Err(SpecError::new(field, "must be at most 4096 characters"));
        }
        out.push((name.clone(), text));
    }
    Ok(out)
}

fn positive_duration(
    prefix: &str,
    key: &str,
    text: Option<&str>,
) -> Result<Option<Duration>, SpecError> {
    let Some(t) = text else {
        return Ok(None);
    };
    let field = format!("{prefix}.{key}");
    let d = parse_duration(&field, t)?;
    if d.is_zero() {
        return Err(SpecError::new(field, "must be longer than zero"));
    }
    Ok(Some(d))
}

/// pgbench's run options of workload `w` (its kind is pgbench).
pub(super) fn options(
    prefix: &str,
    w: &RawWorkload,
    files: &Files,
) -> Result<PgbenchOptions, SpecError> {
    let mut scripts = Vec::new();
    if let Some(list) = &w.scripts {
        if w.builtin.is_some() {
            return Err(err(prefix, "scripts", "give builtin or scripts, not both"));
        }
        if list.is_empty() || list.len() > MAX_SCRIPTS {
            return Err(err(
                prefix,
                "scripts",
                format!("list 1 to {MAX_SCRIPTS} scripts"),
            ));
        }
        let mut symbols = Symbols::default();
        for (i, s) in list.iter().enumerate() {
            let field = format!("{prefix}.scripts[{i}]");
            scripts.push(script(&field, s, files, &mut symbols)?);
        }
    }
    let rate = w.rate.unwrap_or(0.0);
    if !(rate.is_finite() && (0.0..=10_000_000.0).contains(&rate)) || w.rate == Some(0.0) {
        return Err(err(
            prefix,
            "rate",
            "must be a number of transactions per second above 0 and at most 10000000",
        ));
    }
    let latency_limit = positive_duration(prefix, "latency_limit", w.latency_limit.as_deref())?;
    let retry_time_limit =
        positive_duration(prefix, "retry_time_limit", w.retry_time_limit.as_deref())?;
    let transactions = w.transactions.unwrap_or(0);
    if w.transactions.is_some() && !(1..=1_000_000_000).contains(&transactions) {
        return Err(err(
            prefix,
            "transactions",
            "must be between 1 and 1000000000",
        ));
    }
    let max_tries = w.max_tries.unwrap_or(1);
    if max_tries > 1_000_000 {
        return Err(err(
            prefix,
            "max_tries",
            "must be at most 1000000 (0 = unlimited)",
        ));
    }
    if max_tries == 0 && transactions > 0 && latency_limit.is_none() && retry_time_limit.is_none() {
        return Err(err(
            prefix,
            "max_tries",
            "0 (unlimited) with transactions needs a bound: latency_limit or retry_time_limit",
        ));
    }
    if retry_time_limit.is_some() && (max_tries != 0 || transactions == 0) {
        return Err(err(
            prefix,
            "retry_time_limit",
            "bounds unlimited retries (max_tries = 0) of a run of transactions; with a duration the window's end bounds them",
        ));
    }
    Ok(PgbenchOptions {
        scripts,
        variables: variables(prefix, w)?,
        rate,
        latency_limit,
        max_tries,
        retry_time_limit,
        connect_per_transaction: w.connect_per_transaction.unwrap_or(false),
        transactions,
        random_seed: w.random_seed,
        statement_latencies: w.statement_latencies.unwrap_or(true),
        continue_on_error: w.continue_on_error.unwrap_or(true),
    })
}

/// `init` (`"pgbench"`, `"none"` or a table `{ sql, dump, pgbench }`) and the pgbench
/// init options.
pub(super) fn data_init(
    prefix: &str,
    w: &RawWorkload,
    files: &Files,
) -> Result<DataInit, SpecError> {
    let field = format!("{prefix}.init");
    let mut init = DataInit::default();
    match &w.init {
        None => {}
        Some(toml::Value::String(s)) if s == "pgbench" => {}
        Some(toml::Value::String(s)) if s == "none" => init.pgbench = false,
        Some(toml::Value::Table(t)) => {
            init.pgbench = false;
            for (key, v) in t {
                let f = format!("{field}.{key}");
                match (key.as_str(), v) {
                    ("pgbench", toml::Value::Boolean(b)) => init.pgbench = *b,
                    ("sql", toml::Value::String(name)) => {
                        init.sql = Some(sent_file(&f, name, files, MAX_INIT_SQL_BYTES)?);
                    }
                    ("dump", toml::Value::String(path)) => init.dump = Some(dump_path(&f, path)?),
                    ("pgbench", _) => return Err(SpecError::new(f, "must be true or false")),
                    ("sql" | "dump", _) => {
                        return Err(SpecError::new(f, "must be a path (a string)"));
                    }
                    _ => {
                        return Err(SpecError::new(
                            f,
                            "unknown key; [workload.init] takes sql, dump and pgbench",
                        ));
                    }
                }
            }
            if !init.pgbench && init.sql.is_none() && init.dump.is_none() {
                return Err(SpecError::new(
                    field,
                    "names nothing to load: give sql = \"file\", dump = \"/path\" or pgbench = true (or init = \"none\")",
                ));
            }
        }
        Some(other) => {
            return Err(SpecError::new(
                field,
                format!(
                    "{other} is not allowed; use \"pgbench\", \"none\" or a table [workload.init] with sql, dump, pgbench"
                ),
            ));
        }
    }
    init.pgbench_options = pgbench_init(prefix, w, init.pgbench)?;
    Ok(init)
}

fn dump_path(field: &str, path: &str) -> Result<String, SpecError> {
    if !path.starts_with('/') || path.len() > 4096 || path.contains('\0') {
        return Err(SpecError::new(
            field,
            format!("{path:?} is not an absolute path on the database host"),
        ));
    }
    Ok(path.to_string())
}

/// The `pgbench -i` options; refused when no pgbench tables are loaded.
fn pgbench_init(prefix: &str, w: &RawWorkload, pgbench: bool) -> Result<PgbenchInit, SpecError> {
    let given = [
        ("fillfactor", w.fillfactor.is_some()),
        ("partitions", w.partitions.is_some()),
        ("partition_method", w.partition_method.is_some()),
        ("unlogged", w.unlogged.is_some()),
        ("foreign_keys", w.foreign_keys.is_some()),
        ("init_steps", w.init_steps.is_some()),
    ];
    if !pgbench && let Some((key, _)) = given.iter().find(|(_, set)| *set) {
        return Err(err(
            prefix,
            key,
            "only applies when pgbench's tables are loaded (init = \"pgbench\" or [workload.init] pgbench = true)",
        ));
    }
    let fillfactor = w.fillfactor.unwrap_or(100);
    if !(10..=100).contains(&fillfactor) {
        return Err(err(prefix, "fillfactor", "must be between 10 and 100"));
    }
    let partitions = w.partitions.unwrap_or(0);
    if partitions > 10_000 {
        return Err(err(prefix, "partitions", "must be at most 10000"));
    }
    if let Some(m) = &w.partition_method {
        if !["range", "hash"].contains(&m.as_str()) {
            return Err(err(
                prefix,
                "partition_method",
                format!("{m:?} is not range or hash"),
            ));
        }
        if partitions == 0 {
            return Err(err(prefix, "partition_method", "needs partitions above 0"));
        }
    }
    let steps = w.init_steps.clone().unwrap_or_default();
    if w.init_steps.is_some() && steps.trim().is_empty() {
        return Err(err(
            prefix,
            "init_steps",
            "names no step; use some of d t g G v p f",
        ));
    }
    if let Some(c) = steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
        return Err(err(
            prefix,
            "init_steps",
            format!("{c:?} is not a step; use some of d t g G v p f (pgbench -I)"),
        ));
    }
    Ok(PgbenchInit {
        steps,
        fillfactor: if w.fillfactor.is_some() {
            fillfactor
        } else {
            0
        },
        partitions,
        partition_method: w.partition_method.clone(),
        unlogged: w.unlogged.unwrap_or(false),
        foreign_keys: w.foreign_keys.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests;
