//! `[workload]` and `[workload_variants.NAME]`: what each run executes, for how long.

use std::collections::BTreeMap;
use std::time::Duration;

use super::field::{check_name, parse_duration};
use crate::error::SpecError;
use crate::limits::{BUILTINS, PROTOCOLS};
use crate::model::{Workload, WorkloadKind};
use crate::raw::{RawWorkload, RawWorkloadOverride};

/// The named workload variants, each `base` with its overrides; none given is one variant
/// "default" of `workload`.
pub(super) fn workload_variants(
    base: &RawWorkload,
    overrides: &BTreeMap<String, RawWorkloadOverride>,
    workload: &Workload,
) -> Result<Vec<(String, Workload)>, SpecError> {
    let mut out = vec![];
    for (name, o) in overrides {
        let field = format!("workload_variants.{name}");
        check_name(&field, name)?;
        let merged = merge_workload(base, o);
        out.push((name.clone(), validate_workload(&field, &merged)?));
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
    }
}

/// One workload table, its fields named under `prefix`.
pub(super) fn validate_workload(prefix: &str, w: &RawWorkload) -> Result<Workload, SpecError> {
    let kind = crate::kind::validate_kind(prefix, w)?;
    let builtin = w.builtin.clone().unwrap_or_else(|| "tpcb-like".into());
    let protocol = w.protocol.clone().unwrap_or_else(|| "simple".into());
    check_listed(prefix, "builtin", &builtin, &BUILTINS, "is not a built-in")?;
    check_listed(prefix, "protocol", &protocol, &PROTOCOLS, "is not allowed")?;
    check_sizes(prefix, w, &kind)?;
    let duration = window(prefix, w.duration.as_deref(), &kind)?;
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
                    "is required for kind = \"{}\" (e.g. duration = \"60s\")",
                    kind.name()
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
