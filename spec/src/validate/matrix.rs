//! `[matrix]` and `[baseline]`: the page sizes, segment sizes, clients and scales to vary,
//! the baseline cell, and the size of the whole job.

use crate::error::SpecError;
use crate::limits::{DATA_BLOCK_SIZES_KB, SEGSIZES_GB, WAL_BLOCK_SIZES_KB, WAL_SEGSIZES_MB};
use crate::model::{Source, Vary};
use crate::raw::{RawBaseline, RawMatrix};

/// Most runs one job may have.
const MAX_RUNS: usize = 100_000;

/// The matrix axes that validation fills in: segment sizes (`[0]` = PostgreSQL's default)
/// and how the page sizes combine.
pub(super) struct Axes {
    pub segsizes_gb: Vec<u32>,
    pub wal_segsizes_mb: Vec<u32>,
    pub vary: Vary,
}

/// Every axis of `[matrix]`: known sizes, each listed once, counts in range.
pub(super) fn axes(m: &RawMatrix) -> Result<Axes, SpecError> {
    check_sizes(
        "matrix.block_size_kb",
        &m.block_size_kb,
        &DATA_BLOCK_SIZES_KB,
    )?;
    check_sizes(
        "matrix.wal_block_size_kb",
        &m.wal_block_size_kb,
        &WAL_BLOCK_SIZES_KB,
    )?;
    let segsizes_gb = optional_axis("matrix.segsize_gb", &m.segsize_gb, &SEGSIZES_GB)?;
    let wal_segsizes_mb =
        optional_axis("matrix.wal_segsize_mb", &m.wal_segsize_mb, &WAL_SEGSIZES_MB)?;
    let vary = vary(m.vary.as_deref())?;
    counts("matrix.clients", &m.clients, 1, 10_000, false)?;
    counts("matrix.scale", &m.scale, 1, 100_000, true)?;
    Ok(Axes {
        segsizes_gb,
        wal_segsizes_mb,
        vary,
    })
}

fn vary(text: Option<&str>) -> Result<Vary, SpecError> {
    match text.unwrap_or("one-at-a-time") {
        "one-at-a-time" => Ok(Vary::OneAtATime),
        "all" => Ok(Vary::All),
        other => Err(SpecError::new(
            "matrix.vary",
            format!("{other:?} is not allowed; use one-at-a-time or all"),
        )),
    }
}

/// The baseline data / WAL page sizes: as given (they must be a cell of the matrix), else
/// 8K/8K when that is a cell, else the first sizes of the matrix.
pub(super) fn baseline(b: Option<&RawBaseline>, m: &RawMatrix) -> Result<(u32, u32), SpecError> {
    let given = (
        b.and_then(|b| b.block_size_kb).unwrap_or(8),
        b.and_then(|b| b.wal_block_size_kb).unwrap_or(8),
    );
    let explicit = b.is_some_and(|b| b.block_size_kb.is_some() || b.wal_block_size_kb.is_some());
    let in_matrix = m.block_size_kb.contains(&given.0) && m.wal_block_size_kb.contains(&given.1);
    if in_matrix {
        Ok(given)
    } else if explicit {
        Err(SpecError::new(
            "baseline",
            format!(
                "{}K/{}K is not a cell of the matrix (block_size_kb {:?}, wal_block_size_kb {:?})",
                given.0, given.1, m.block_size_kb, m.wal_block_size_kb
            ),
        ))
    } else {
        Ok((m.block_size_kb[0], m.wal_block_size_kb[0]))
    }
}

/// The baseline source: as given (it must be one of `sources`), else the first.
pub(super) fn baseline_source(
    b: Option<&RawBaseline>,
    sources: &[(String, Source)],
) -> Result<String, SpecError> {
    match b.and_then(|b| b.source.clone()) {
        Some(s) if sources.iter().any(|(n, _)| *n == s) => Ok(s),
        Some(s) => {
            let names: Vec<&str> = sources.iter().map(|(n, _)| n.as_str()).collect();
            Err(SpecError::new(
                "baseline.source",
                format!("{s:?} is not a source; use one of {}", names.join(", ")),
            ))
        }
        None => Ok(sources[0].0.clone()),
    }
}

/// The job stays within [`MAX_RUNS`]: the matrix axes times `variants` (sources x settings
/// variants x workload variants) times the repetitions.
pub(super) fn check_run_count(
    m: &RawMatrix,
    axes: &Axes,
    variants: usize,
    repetitions: u32,
) -> Result<(), SpecError> {
    let cells = variants
        * m.block_size_kb.len().max(1)
        * m.wal_block_size_kb.len().max(1)
        * axes.segsizes_gb.len()
        * axes.wal_segsizes_mb.len()
        * m.clients.len()
        * m.scale.len().max(1);
    if cells * repetitions as usize > MAX_RUNS {
        return Err(SpecError::new(
            "matrix",
            format!("{cells} cells x {repetitions} repetitions is more than {MAX_RUNS} runs"),
        ));
    }
    Ok(())
}

fn optional_axis(field: &str, values: &[u32], allowed: &[u32]) -> Result<Vec<u32>, SpecError> {
    if values.is_empty() {
        return Ok(vec![0]);
    }
    check_sizes(field, values, allowed)?;
    Ok(values.to_vec())
}

fn counts(
    field: &str,
    values: &[u32],
    min: u32,
    max: u32,
    may_be_empty: bool,
) -> Result<(), SpecError> {
    if values.is_empty() && !may_be_empty {
        return Err(SpecError::new(field, "must list at least one value"));
    }
    for (i, &c) in values.iter().enumerate() {
        if !(min..=max).contains(&c) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{c} is not allowed; use {min} to {max}"),
            ));
        }
        if values[..i].contains(&c) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{c} is listed twice"),
            ));
        }
    }
    Ok(())
}

fn check_sizes(field: &str, values: &[u32], allowed: &[u32]) -> Result<(), SpecError> {
    if values.is_empty() {
        return Err(SpecError::new(field, "must list at least one size"));
    }
    for (i, v) in values.iter().enumerate() {
        if !allowed.contains(v) {
            let list: Vec<String> = allowed.iter().map(u32::to_string).collect();
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!(
                    "{v} is not a size PostgreSQL allows; use one of {} (KB)",
                    list.join(", ")
                ),
            ));
        }
        if values[..i].contains(v) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{v} is listed twice"),
            ));
        }
    }
    Ok(())
}
