//! Per-cell statistics from a [`JobExport`]: one job against its baseline cells, or the like
//! cells of two jobs. Pure functions; the coordinator calls them for `QueryResults`,
//! `ExportJob` and `CompareJobs`.

use std::collections::BTreeMap;

use blocklab_proto::v1::*;
use serde_json::{Map, Value};

use blocklab_spec::RunState;

use crate::stats::{self, Metric, Summary, Verdict};

/// Verdict of a cell of job B that has no like cell in job A.
pub const NO_LIKE_CELL: &str = "no like cell";

/// The value of `metric` in a run's result; NaN when the run does not have that metric.
pub fn metric_value(m: &RunMetrics, metric: &Metric) -> f64 {
    match metric {
        Metric::Tps => m.tps,
        Metric::TpsInclConn => m.tps_incl_conn,
        Metric::LatencyAvgMs => m.latency_avg_ms,
        Metric::LatencyP50Ms => m.latency_p50_ms,
        Metric::LatencyP90Ms => m.latency_p90_ms,
        Metric::LatencyP99Ms => m.latency_p99_ms,
        Metric::LatencyP999Ms => m.latency_p999_ms,
        Metric::LatencyMaxMs => m.latency_max_ms,
        Metric::Workload { name, .. } => m
            .extra
            .iter()
            .find(|x| x.name == *name)
            .map_or(f64::NAN, |x| x.value),
    }
}

/// A cell's measured runs: done, with a result.
pub fn measured<'a>(
    export: &'a JobExport,
    cell_index: u32,
) -> impl Iterator<Item = (&'a ExportRun, &'a RunMetrics)> + 'a {
    export
        .runs
        .iter()
        .filter(move |r| r.cell_index == cell_index && r.state.parse() == Ok(RunState::Done))
        .filter_map(|r| r.result.as_ref().map(|m| (r, m)))
}

fn dims(json: &str) -> Map<String, Value> {
    serde_json::from_str(json).unwrap_or_default()
}

/// Dimensions other than the source: a cell's baseline is the baseline cell (baseline page
/// sizes, baseline source) with the same clients and the same other dimensions.
fn group_key(c: &ExportCell) -> (u32, Map<String, Value>) {
    let mut d = dims(&c.dims_json);
    d.remove("source");
    (c.clients, d)
}

/// One cell's statistics of `metric`, without the comparison.
fn own_stats(
    export: &JobExport,
    cell: &ExportCell,
    metric: &Metric,
) -> (CellResult, Option<Summary>) {
    let all: Vec<(&ExportRun, &RunMetrics)> = measured(export, cell.cell_index).collect();
    let sel = stats::select_runs(all.iter().map(|&(r, m)| (m, !r.suspect_reasons.is_empty())));
    let values: Vec<f64> = sel
        .used
        .iter()
        .map(|m| metric_value(m, metric))
        .filter(|v| v.is_finite())
        .collect();
    let summary = stats::summarize(&values);
    let tps: Vec<f64> = sel.used.iter().map(|m| m.tps).collect();
    let (tps_mean, tps_stddev) = stats::mean_stddev(&tps).unwrap_or((0.0, 0.0));
    let lat: Vec<f64> = sel.used.iter().map(|m| m.latency_avg_ms).collect();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for (r, _) in &all {
        for reason in &r.suspect_reasons {
            *reasons.entry(reason.as_str()).or_default() += 1;
        }
    }
    let mine = export
        .runs
        .iter()
        .filter(|r| r.cell_index == cell.cell_index);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let s = summary.unwrap_or(Summary {
        n: 0,
        mean: 0.0,
        stddev: 0.0,
        cv: None,
        ci95: None,
    });
    let (ci_low, ci_high) = s.ci95.unwrap_or((s.mean, s.mean));
    let result = CellResult {
        cell_index: cell.cell_index,
        label: cell.label.clone(),
        block_size_kb: cell.block_size_kb,
        wal_block_size_kb: cell.wal_block_size_kb,
        clients: cell.clients,
        proven_block_size: mine.clone().map(|r| r.block_size).max().unwrap_or(0),
        proven_wal_block_size: mine.clone().map(|r| r.wal_block_size).max().unwrap_or(0),
        runs_ok: count(all.len()),
        runs_total: count(mine.count()),
        tps_mean,
        tps_stddev,
        latency_avg_ms_mean: stats::mean_stddev(&lat).map(|(m, _)| m).unwrap_or(0.0),
        is_baseline: cell.is_baseline,
        metric: metric.name().to_string(),
        mean: s.mean,
        stddev: s.stddev,
        cv: s.cv.unwrap_or(0.0),
        ci95_low: ci_low,
        ci95_high: ci_high,
        runs_suspect: count(sel.suspect),
        runs_excluded: count(sel.excluded),
        n: count(s.n),
        suspect_included: sel.suspect_included,
        dims_json: cell.dims_json.clone(),
        suspect_reasons: reasons
            .into_iter()
            .map(|(r, n)| {
                if n > 1 {
                    format!("{r} x{n}")
                } else {
                    r.to_string()
                }
            })
            .collect(),
        higher_is_better: metric.higher_is_better(),
        unit: metric.unit().to_string(),
        ..Default::default()
    };
    (result, summary)
}

/// Fills the comparison fields of `r` (the treatment) against `base`.
fn compare_into(
    r: &mut CellResult,
    metric: &Metric,
    treat: Option<&Summary>,
    base: Option<(&str, Option<&Summary>)>,
) {
    let Some((label, base)) = base else {
        r.verdict = Verdict::InsufficientData.to_string();
        return;
    };
    r.baseline_label = label.to_string();
    r.baseline_mean = base.map(|b| b.mean);
    if let (Some(b), Some(t)) = (base, treat) {
        r.pct_change_vs_baseline = stats::pct_change(t.mean, b.mean);
    }
    let change = base.zip(treat).and_then(|(b, t)| stats::welch(b, t));
    if let Some(c) = &change {
        r.pct_change_ci95_low = c.pct_ci95.map(|p| p.0);
        r.pct_change_ci95_high = c.pct_ci95.map(|p| p.1);
        r.p_value = Some(c.p_value);
        r.welch_df = Some(c.df);
    }
    r.verdict = stats::verdict(metric, change.as_ref()).to_string();
}

/// Every cell of a job with its statistics of `metric`; each non-baseline cell is compared
/// with its baseline cell: the cell flagged baseline (baseline page sizes and source) that
/// has the same clients and other dimensions.
pub fn cell_results(export: &JobExport, metric: &Metric) -> Vec<CellResult> {
    let own: Vec<(CellResult, Option<Summary>)> = export
        .cells
        .iter()
        .map(|c| own_stats(export, c, metric))
        .collect();
    let mut out = Vec::with_capacity(own.len());
    for (i, cell) in export.cells.iter().enumerate() {
        let (mut r, summary) = own[i].clone();
        if cell.is_baseline {
            r.verdict = Verdict::Baseline.to_string();
            r.baseline_label = cell.label.clone();
            r.baseline_mean = summary.map(|s| s.mean);
        } else {
            let key = group_key(cell);
            let base = export
                .cells
                .iter()
                .position(|b| b.is_baseline && group_key(b) == key)
                .map(|j| (export.cells[j].label.as_str(), own[j].1.as_ref()));
            compare_into(&mut r, metric, summary.as_ref(), base);
        }
        out.push(r);
    }
    out
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

/// Each cell of job B compared with A's like cell (A is the baseline, B the treatment).
pub fn compare(a: &JobExport, b: &JobExport, metric: &Metric) -> Vec<CellResult> {
    let mut keys = varying_keys(a);
    keys.extend(varying_keys(b));
    keys.sort();
    keys.dedup();
    let a_cells: Vec<(_, (CellResult, Option<Summary>))> = a
        .cells
        .iter()
        .map(|c| (like_key(c, &keys), own_stats(a, c, metric)))
        .collect();
    b.cells
        .iter()
        .map(|cell| {
            let (mut r, summary) = own_stats(b, cell, metric);
            r.is_baseline = false;
            let key = like_key(cell, &keys);
            match a_cells.iter().find(|(k, _)| *k == key) {
                Some((_, (ar, asum))) => {
                    let base = Some((ar.label.as_str(), asum.as_ref()));
                    compare_into(&mut r, metric, summary.as_ref(), base);
                }
                None => r.verdict = NO_LIKE_CELL.to_string(),
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests;
