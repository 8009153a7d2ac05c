//! `[matrix]` and `[baseline]`: the page sizes, segment sizes, clients and scales to vary,
//! the baseline cell, and the size of the whole job.

use crate::error::SpecError;
use crate::limits::{DATA_BLOCK_SIZES_KB, SEGSIZES_GB, WAL_BLOCK_SIZES_KB, WAL_SEGSIZES_MB};
use crate::model::{Source, Vary};
use crate::raw::{RawBaseline, RawMatrix};

/// Most runs one job may have.
const MAX_RUNS: u64 = 100_000;
/// Most cells one job may have.
const MAX_CELLS: u64 = 10_000;

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

/// The job stays within [`MAX_CELLS`] and [`MAX_RUNS`]: the matrix axes times `variants`
/// (sources, settings variants, workload variants) times the repetitions, in checked
/// arithmetic (no product of axis lengths wraps).
pub(super) fn check_run_count(
    m: &RawMatrix,
    axes: &Axes,
    variants: [usize; 3],
    repetitions: u32,
) -> Result<(), SpecError> {
    let lengths = [
        ("sources", variants[0]),
        ("settings variants", variants[1]),
        ("workload variants", variants[2]),
        ("block_size_kb", m.block_size_kb.len().max(1)),
        ("wal_block_size_kb", m.wal_block_size_kb.len().max(1)),
        ("segsize_gb", axes.segsizes_gb.len()),
        ("wal_segsize_mb", axes.wal_segsizes_mb.len()),
        ("clients", m.clients.len()),
        ("scale", m.scale.len().max(1)),
    ];
    let cells = lengths
        .iter()
        .try_fold(1u64, |product, (_, n)| product.checked_mul(*n as u64))
        .filter(|cells| *cells <= MAX_CELLS);
    let Some(cells) = cells else {
        let axes: Vec<String> = lengths
            .iter()
            .filter(|(_, n)| *n > 1)
            .map(|(name, n)| format!("{n} {name}"))
            .collect();
        return Err(SpecError::new(
            "matrix",
            format!("{} make more than {MAX_CELLS} cells", axes.join(" x ")),
        ));
    };
    if cells * u64::from(repetitions) > MAX_RUNS {
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
    let mut seen = std::collections::HashSet::with_capacity(values.len());
    for (i, &c) in values.iter().enumerate() {
        if !(min..=max).contains(&c) {
            return Err(SpecError::new(
                format!("{field}[{i}]"),
                format!("{c} is not allowed; use {min} to {max}"),
            ));
        }
        if !seen.insert(c) {
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

#[cfg(test)]
mod tests {
    use crate::Spec;

    fn spec(matrix: &str, more: &str) -> String {
        format!(
            r#"
name = "big"
{more}
[source]
tarball = "/var/cache/blocklab/src/postgresql-15.18.tar.bz2"
[matrix]
{matrix}
[workload]
builtin = "select-only"
duration = "1s"
"#
        )
    }

    fn list(n: u32) -> String {
        let v: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        format!("[{}]", v.join(", "))
    }

    #[test]
    fn axis_lengths_are_multiplied_without_wrapping_and_cells_are_bounded() {
        let text = spec(
            &format!(
                "block_size_kb = [8]\nclients = {}\nscale = {}",
                list(5000),
                list(5000)
            ),
            "",
        );
        let e = Spec::parse(&text).expect_err("too many cells");
        assert_eq!(e.field, "matrix");
        assert_eq!(
            e.message,
            "5000 clients x 5000 scale make more than 10000 cells"
        );
        let text = spec(
            &format!(
                "block_size_kb = [8]\nclients = {}\nscale = {}",
                list(100),
                list(100)
            ),
            "repetitions = 11",
        );
        let e = Spec::parse(&text).expect_err("too many runs");
        assert_eq!(
            e.message,
            "10000 cells x 11 repetitions is more than 100000 runs"
        );
    }

    /// The largest matrix a job may have is planned whole, each cell compared where it
    /// should be (linear in the cells: a baseline is one lookup).
    #[test]
    fn the_largest_matrix_is_planned() {
        let text = spec(
            &format!(
                "block_size_kb = [8, 16]\nclients = {}\nscale = {}",
                list(100),
                list(50)
            ),
            "",
        );
        let plan = Spec::parse(&text).expect("legal").plan();
        assert_eq!(plan.cells.len(), 10_000);
        for c in &plan.cells {
            let base = c.baseline_cell.map(|i| &plan.cells[i as usize]);
            match c.block_size_kb {
                8 => assert!(c.is_baseline && base.is_none()),
                _ => {
                    let b = base.expect("compared");
                    assert_eq!(
                        (b.block_size_kb, b.clients, b.scale),
                        (8, c.clients, c.scale)
                    );
                }
            }
        }
    }
}
