//! Validation of the raw spec into a [`Spec`]: every error names its field.
//!
//! [`field`] holds the checks every part shares; [`order`], [`source`], [`matrix`],
//! [`settings`] and [`workload`] validate one part of the spec each.

mod analysis;
mod field;
mod matrix;
mod order;
mod pgbench;
mod search;
pub mod series;
mod settings;
mod source;
mod workload;

pub(super) use field::toml_error;
pub use source::validate_configure_flag;

use crate::error::SpecError;
use crate::limits::MAX_SPEC_BYTES;
use crate::model::{Layout, Spec};
use crate::raw::{RawPlacement, RawSpec};
use crate::script::Files;

pub(super) fn parse(text: &str, files: &Files) -> Result<Spec, SpecError> {
    if text.len() > MAX_SPEC_BYTES {
        return Err(SpecError::new(
            "spec",
            format!(
                "{} bytes is larger than the limit of {MAX_SPEC_BYTES}",
                text.len()
            ),
        ));
    }
    let raw: RawSpec = toml::from_str(text).map_err(|e| toml_error(text, e))?;
    validate(raw, files)
}

/// Every part in the order a reader meets it, so the first error reported is the first
/// one in the spec.
fn validate(raw: RawSpec, files: &Files) -> Result<Spec, SpecError> {
    check_header(&raw)?;
    let (repetitions, adaptive) = analysis::repetitions(&raw.repetitions, raw.budget.as_deref())?;
    let order = order::run_order(raw.order.as_deref(), raw.seed)?;
    let memory_policy = settings::memory_policy(raw.memory_policy.as_deref())?;
    series::commits_first(
        raw.kind.as_deref(),
        raw.commits.as_ref(),
        raw.series.is_some(),
        raw.source.is_some(),
    )?;
    let sources = source::validate_sources(raw.source, raw.sources)?;
    let axes = matrix::axes(&raw.matrix)?;
    let baseline = matrix::baseline(raw.baseline.as_ref(), &raw.matrix)?;
    let baseline_source = matrix::baseline_source(raw.baseline.as_ref(), &sources)?;
    let settings = settings::validate_settings("settings", &raw.settings, memory_policy)?;
    let settings_variants = settings::settings_variants(&raw.settings_variants, memory_policy)?;
    let workload = workload::validate_workload("workload", &raw.workload, files)?;
    let workload_variants =
        workload::workload_variants(&raw.workload, &raw.workload_variants, &workload, files)?;
    let client_workers = check_placement(&raw.placement, &raw.matrix.clients)?;
    let host_wait = host_wait(raw.placement.host_wait.as_deref())?;
    let db_hosts = db_hosts(raw.placement.db_hosts, repetitions, adaptive.is_some())?;
    let analysis = analysis::analysis(raw.equivalence_pct, raw.suspect_runs.as_deref())?;
    let base = raw.baseline.as_ref();
    let baseline_settings_variant =
        analysis::baseline_variant(base, "settings", &settings_variants)?;
    let baseline_workload_variant =
        analysis::baseline_variant(base, "workload", &workload_variants)?;
    let variants = [
        sources.len(),
        settings_variants.len(),
        workload_variants.len(),
    ];
    let budget = adaptive.and_then(|a| a.budget);
    for (prefix, w) in std::iter::once(("workload".to_string(), &workload)).chain(
        workload_variants
            .iter()
            .map(|(name, w)| (format!("workload_variants.{name}"), w)),
    ) {
        if w.auto_window && budget.is_none() {
            return Err(SpecError::new(
                format!("{prefix}.duration"),
                "\"auto\" lets the coordinator choose the window for a budget; give budget = \"10m\" (with adaptive repetitions), or a duration such as \"60s\"",
            ));
        }
    }
    let most = adaptive.map_or(repetitions, |a| a.max);
    matrix::check_run_count(&raw.matrix, &axes, variants, most)?;
    let search = search::search(search::Parts {
        search: raw.search.as_deref(),
        matrix: &raw.matrix,
        sources: sources.len(),
        workload_variants: raw.workload_variants.len(),
        adaptive: adaptive.as_ref(),
        order,
    })?;
    let compare_sources = base.and_then(|b| b.compare_sources).unwrap_or(false);
    let series = series::series(series::Parts {
        kind: raw.kind.as_deref(),
        points: raw.series.as_deref(),
        commits: raw.commits.as_ref(),
        sources: &sources,
        compare_sources,
    })?;
    let spec = Spec {
        search,
        series,
        name: raw.name,
        repetitions,
        adaptive,
        analysis,
        compare_sources,
        replicate_baseline: raw.matrix.replicate_baseline,
        baseline_settings_variant,
        baseline_workload_variant,
        order,
        baseline,
        baseline_source,
        memory_policy,
        sources,
        vary: axes.vary,
        block_sizes_kb: raw.matrix.block_size_kb,
        wal_block_sizes_kb: raw.matrix.wal_block_size_kb,
        segsizes_gb: axes.segsizes_gb,
        wal_segsizes_mb: axes.wal_segsizes_mb,
        clients: raw.matrix.clients,
        scales: raw.matrix.scale,
        settings,
        settings_variants,
        workload,
        workload_variants,
        layout: Layout {
            separate_wal: raw.layout.separate_wal,
            drop_os_cache: raw.layout.drop_os_cache,
            checkpoint_before: raw.layout.checkpoint_before.unwrap_or(true),
            cold: raw.layout.cold,
            archive_wal: raw.layout.archive_wal,
        },
        db_host_labels: raw.placement.db_host_labels,
        client_workers,
        host_wait,
        db_hosts,
        same_hardware: raw.placement.same_hardware.unwrap_or(true),
    };
    search::enough_cells(&spec)?;
    Ok(spec)
}

/// `placement.db_hosts`: 1 to 16; with more than one, a fixed number of repetitions that
/// each host gets equally many of.
fn db_hosts(n: Option<u32>, repetitions: u32, adaptive: bool) -> Result<u32, SpecError> {
    let field = "placement.db_hosts";
    let n = n.unwrap_or(1);
    if !(1..=16).contains(&n) {
        return Err(SpecError::new(field, "must be between 1 and 16"));
    }
    if n > 1 && adaptive {
        return Err(SpecError::new(
            field,
            "more than one database host needs a fixed number of repetitions, not adaptive ones",
        ));
    }
    if n > 1 && !repetitions.is_multiple_of(n) {
        return Err(SpecError::new(
            field,
            format!(
                "each host runs a full replicate of the cells: repetitions ({repetitions}) must be a multiple of {n}"
            ),
        ));
    }
    Ok(n)
}

/// `placement.host_wait`: from a second to a week; the default when absent.
fn host_wait(text: Option<&str>) -> Result<std::time::Duration, SpecError> {
    let Some(text) = text else {
        return Ok(crate::model::DEFAULT_HOST_WAIT);
    };
    let field = "placement.host_wait";
    let d = humantime::parse_duration(text.trim()).map_err(|e| {
        SpecError::new(
            field,
            format!("cannot parse {text:?} as a duration ({e}); write e.g. \"30min\" or \"12h\""),
        )
    })?;
    if d < std::time::Duration::from_secs(1) || d > std::time::Duration::from_secs(7 * 24 * 3600) {
        return Err(SpecError::new(field, "must be between 1s and 7days"));
    }
    Ok(d)
}

/// `kind` (a benchmark) and `name`.
fn check_header(raw: &RawSpec) -> Result<(), SpecError> {
    if let Some(k) = raw
        .kind
        .as_deref()
        .filter(|k| *k != "series" && k.parse() != Ok(crate::state::JobKind::Benchmark))
    {
        return Err(SpecError::new(
            "kind",
            format!(
                "{k:?} here needs the probe spec layout; a benchmark has kind = \"benchmark\" (or \"series\")"
            ),
        ));
    }
    if raw.name.trim().is_empty() || raw.name.len() > 200 {
        return Err(SpecError::new("name", "must be 1 to 200 characters"));
    }
    Ok(())
}

/// `[placement]`: the number of client workers (every cell's clients split across them)
/// and the database host labels.
fn check_placement(p: &RawPlacement, clients: &[u32]) -> Result<u32, SpecError> {
    let client_workers = p.client_workers.unwrap_or(1);
    if !(1..=64).contains(&client_workers) {
        return Err(SpecError::new(
            "placement.client_workers",
            "must be between 1 and 64",
        ));
    }
    if let Some(c) = clients.iter().find(|&&c| c < client_workers) {
        return Err(SpecError::new(
            "matrix.clients",
            format!("{c} clients cannot be split across {client_workers} client workers"),
        ));
    }
    for (i, l) in p.db_host_labels.iter().enumerate() {
        if l.is_empty() || l.len() > 64 {
            return Err(SpecError::new(
                format!("placement.db_host_labels[{i}]"),
                "labels are 1 to 64 characters",
            ));
        }
    }
    Ok(client_workers)
}
