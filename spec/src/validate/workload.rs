//! `[workload]` and `[workload_variants.NAME]`: what each run executes, for how long.

use std::collections::BTreeMap;
use std::time::Duration;

use super::field::{check_name, parse_duration};
use super::pgbench;
use crate::error::SpecError;
use crate::limits::{BUILTINS, PROTOCOLS};
use crate::model::{Workload, WorkloadKind};
use crate::raw::{RawWorkload, RawWorkloadOverride};
use crate::script::{DataInit, Files, PgbenchOptions};

/// The named workload variants, each `base` with its overrides; none given is one variant
/// "default" of `workload`.
pub(super) fn workload_variants(
    base: &RawWorkload,
    overrides: &BTreeMap<String, RawWorkloadOverride>,
    workload: &Workload,
    files: &Files,
) -> Result<Vec<(String, Workload)>, SpecError> {
    let mut out = vec![];
    for (name, o) in overrides {
        let field = format!("workload_variants.{name}");
        check_name(&field, name)?;
        let merged = merge_workload(base, o);
        out.push((name.clone(), validate_workload(&field, &merged, files)?));
    }
    if out.is_empty() {
        out.push(("default".to_string(), workload.clone()));
    }
    Ok(out)
}

fn merge_workload(base: &RawWorkload, o: &RawWorkloadOverride) -> RawWorkload {
    fn pick<T: Clone>(o: &Option<T>, b: &Option<T>) -> Option<T> {
        o.clone().or_else(|| b.clone())
    }
    RawWorkload {
        kind: base.kind.clone(),
        builtin: pick(&o.builtin, &base.builtin),
        scale: o.scale.unwrap_or(base.scale),
        duration: pick(&o.duration, &base.duration),
        warmup: pick(&o.warmup, &base.warmup),
        protocol: pick(&o.protocol, &base.protocol),
        threads: o.threads.unwrap_or(base.threads),
        keying_thinking: pick(&o.keying_thinking, &base.keying_thinking),
        time_scale: pick(&o.time_scale, &base.time_scale),
        check: pick(&o.check, &base.check),
        mixes: pick(&o.mixes, &base.mixes),
        single_user: pick(&o.single_user, &base.single_user),
        steps: pick(&o.steps, &base.steps),
        scripts: pick(&o.scripts, &base.scripts),
        variables: pick(&o.variables, &base.variables),
        rate: pick(&o.rate, &base.rate),
        latency_limit: pick(&o.latency_limit, &base.latency_limit),
        max_tries: pick(&o.max_tries, &base.max_tries),
        retry_time_limit: pick(&o.retry_time_limit, &base.retry_time_limit),
        connect_per_transaction: pick(&o.connect_per_transaction, &base.connect_per_transaction),
        transactions: pick(&o.transactions, &base.transactions),
        random_seed: pick(&o.random_seed, &base.random_seed),
        statement_latencies: pick(&o.statement_latencies, &base.statement_latencies),
        continue_on_error: pick(&o.continue_on_error, &base.continue_on_error),
        init: pick(&o.init, &base.init),
        fillfactor: pick(&o.fillfactor, &base.fillfactor),
        partitions: pick(&o.partitions, &base.partitions),
        partition_method: pick(&o.partition_method, &base.partition_method),
        unlogged: pick(&o.unlogged, &base.unlogged),
        foreign_keys: pick(&o.foreign_keys, &base.foreign_keys),
        init_steps: pick(&o.init_steps, &base.init_steps),
    }
}

/// One workload table, its fields named under `prefix`.
pub(super) fn validate_workload(
    prefix: &str,
    w: &RawWorkload,
    files: &Files,
) -> Result<Workload, SpecError> {
    let kind = crate::kind::validate_kind(prefix, w)?;
    let builtin = w.builtin.clone().unwrap_or_else(|| "tpcb-like".into());
    let protocol = w.protocol.clone().unwrap_or_else(|| "simple".into());
    check_listed(prefix, "builtin", &builtin, &BUILTINS, "is not a built-in")?;
    check_listed(prefix, "protocol", &protocol, &PROTOCOLS, "is not allowed")?;
    check_sizes(prefix, w, &kind)?;
    let (pgbench, init) = match kind {
        WorkloadKind::Pgbench => (
            pgbench::options(prefix, w, files)?,
            pgbench::data_init(prefix, w, files)?,
        ),
        _ => (PgbenchOptions::default(), DataInit::default()),
    };
    let duration = if pgbench.transactions > 0 {
        if w.duration.is_some() {
            return Err(SpecError::new(
                format!("{prefix}.transactions"),
                "give duration or transactions (per client), not both",
            ));
        }
        Duration::ZERO
    } else if w.duration.as_deref().map(str::trim) == Some("auto") && kind.has_window() {
        crate::model::AUTO_PILOT_WINDOW
    } else {
        window(prefix, w.duration.as_deref(), &kind)?
    };
    let auto_window = duration == crate::model::AUTO_PILOT_WINDOW
        && w.duration.as_deref().map(str::trim) == Some("auto");
    let warmup = match &w.warmup {
        Some(t) => parse_duration(&format!("{prefix}.warmup"), t)?,
        None => Duration::ZERO,
    };
    Ok(Workload {
        kind,
        builtin,
        scale: w.scale,
        duration,
        warmup,
        protocol,
        threads: w.threads,
        pgbench,
        init,
        auto_window,
    })
}

/// `value` of `prefix.key` is one of `allowed`.
fn check_listed(
    prefix: &str,
    key: &str,
    value: &str,
    allowed: &[&str],
    refusal: &str,
) -> Result<(), SpecError> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(SpecError::new(
        format!("{prefix}.{key}"),
        format!("{value:?} {refusal}; use one of {}", allowed.join(", ")),
    ))
}

/// `scale` (smaller for maintenance) and `threads` in range.
fn check_sizes(prefix: &str, w: &RawWorkload, kind: &WorkloadKind) -> Result<(), SpecError> {
    let max_scale = match kind {
        WorkloadKind::Maintenance { .. } => 10_000,
        _ => 100_000,
    };
    if !(1..=max_scale).contains(&w.scale) {
        return Err(SpecError::new(
            format!("{prefix}.scale"),
            format!("must be between 1 and {max_scale}"),
        ));
    }
    if !(1..=1024).contains(&w.threads) {
        return Err(SpecError::new(
            format!("{prefix}.threads"),
            "must be between 1 and 1024",
        ));
    }
    Ok(())
}

/// `duration`: required and longer than zero for kinds with a measured window.
fn window(prefix: &str, text: Option<&str>, kind: &WorkloadKind) -> Result<Duration, SpecError> {
    let field = format!("{prefix}.duration");
    let duration = match (text, kind.has_window()) {
        (Some(d), _) => parse_duration(&field, d)?,
        (None, true) => {
            return Err(SpecError::new(
                field,
                format!(
                    "is required for kind = \"{}\" (e.g. duration = \"60s\"{})",
                    kind.name(),
                    if *kind == WorkloadKind::Pgbench {
                        ", or transactions = 1000 per client"
                    } else {
                        ""
                    }
                ),
            ));
        }
        (None, false) => Duration::ZERO,
    };
    if duration.is_zero() && kind.has_window() {
        return Err(SpecError::new(field, "must be longer than zero"));
    }
    Ok(duration)
}
