//! Which cell each cell is compared with: the plan's baseline of each cell, the old group rule
//! for catalogs whose cells do not name one, or the like cell of another job.

use blocklab_measure::job::*;
use serde_json::{Map, Value};

/// Verdict of a cell of job B that has no like cell in job A.
pub const NO_LIKE_CELL: &str = "no like cell";

/// What a cell is compared with.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Pair {
    /// The cell is a baseline itself.
    Baseline,
    /// Compared with the baseline side's cell at this position, on what differs.
    Against { at: usize, compared_on: String },
    /// No baseline cell for it.
    NoBaseline,
    /// CompareJobs: job A has no like cell.
    NoLikeCell,
}

fn dims(json: &str) -> Map<String, Value> {
    serde_json::from_str(json).unwrap_or_default()
}

/// Dimensions other than the source: in the group rule, a cell's baseline is the baseline cell
/// (baseline page sizes, baseline source) with the same clients and the same other dimensions.
fn group_key(c: &ExportCell) -> (u32, Map<String, Value>) {
    let mut d = dims(&c.dims_json);
    d.remove("source");
    (c.clients, d)
}

/// What differs between two cells the group rule paired: the page sizes and/or the source.
fn differs(c: &ExportCell, b: &ExportCell) -> String {
    let mut on = Vec::new();
    if (c.block_size_kb, c.wal_block_size_kb) != (b.block_size_kb, b.wal_block_size_kb) {
        on.push("page size");
    }
    if dims(&c.dims_json).get("source") != dims(&b.dims_json).get("source") {
        on.push("source");
    }
    on.join(", ")
}

/// Each cell of a job paired with its baseline: the plan's `baseline_cell_index` when any cell
/// of the export has one, else (catalogs from before the plan named baselines) the baseline
/// cell of the same group.
pub(super) fn job_pairs(export: &JobExport) -> Vec<Pair> {
    let cells = &export.cells;
    let planned = cells.iter().any(|c| c.baseline_cell_index.is_some());
    cells
        .iter()
        .map(|cell| {
            if planned {
                let target = cell
                    .baseline_cell_index
                    .filter(|&j| j != cell.cell_index)
                    .and_then(|j| cells.iter().position(|b| b.cell_index == j));
                return match target {
                    Some(at) => Pair::Against {
                        at,
                        compared_on: cell.compared_on.clone(),
                    },
                    None if cell.is_baseline => Pair::Baseline,
                    None => Pair::NoBaseline,
                };
            }
            if cell.is_baseline {
                return Pair::Baseline;
            }
            let key = group_key(cell);
            match cells
                .iter()
                .position(|b| b.is_baseline && group_key(b) == key)
            {
                Some(at) => Pair::Against {
                    at,
                    compared_on: differs(cell, &cells[at]),
                },
                None => Pair::NoBaseline,
            }
        })
        .collect()
}

/// Keys of `dims_json` whose value differs between a job's cells.
fn varying_keys(export: &JobExport) -> Vec<String> {
    let all: Vec<Map<String, Value>> = export.cells.iter().map(|c| dims(&c.dims_json)).collect();
    let mut keys: Vec<String> = all.iter().flat_map(|d| d.keys().cloned()).collect();
    keys.sort();
    keys.dedup();
    keys.retain(|k| all.iter().any(|d| d.get(k) != all[0].get(k)));
    keys
}

/// What makes two cells of different jobs alike: page sizes, clients, and the dimensions that
/// vary inside either job (a dimension fixed in each job, such as its one source, is what the
/// two jobs compare, so it is not matched).
fn like_key(c: &ExportCell, keys: &[String]) -> (u32, u32, u32, Vec<Option<Value>>) {
    let d = dims(&c.dims_json);
    let dims = keys.iter().map(|k| d.get(k).cloned()).collect();
    (c.block_size_kb, c.wal_block_size_kb, c.clients, dims)
}

/// What a cell of B is compared on against A's like cell.
pub(super) const COMPARED_ON_JOB: &str = "job";

/// Each cell of job B paired with A's like cell.
pub(super) fn like_pairs(a: &JobExport, b: &JobExport) -> Vec<Pair> {
    let mut keys = varying_keys(a);
    keys.extend(varying_keys(b));
    keys.sort();
    keys.dedup();
    let a_keys: Vec<_> = a.cells.iter().map(|c| like_key(c, &keys)).collect();
    b.cells
        .iter()
        .map(|cell| {
            let key = like_key(cell, &keys);
            match a_keys.iter().position(|k| *k == key) {
                Some(at) => Pair::Against {
                    at,
                    compared_on: COMPARED_ON_JOB.to_string(),
                },
                None => Pair::NoLikeCell,
            }
        })
        .collect()
}
