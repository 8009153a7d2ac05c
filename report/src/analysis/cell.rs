//! One cell's runs and its own statistics of a metric, before any comparison.

use std::collections::BTreeMap;

use blocklab_measure::job::*;
use blocklab_spec::RunState;

use crate::stats::{self, Metric, Run, Summary};

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

/// The runs of a cell that enter its statistics under one selection, with the counts that do
/// not depend on the metric.
pub(super) struct Runs<'a> {
    pub used: Vec<&'a RunMetrics>,
    /// The database host and the round (`repetition`) of each used run (aligned with `used`).
    pub hosts: Vec<&'a str>,
    pub rounds: Vec<u32>,
    pub measured: usize,
    pub total: usize,
    pub suspect: usize,
    pub excluded: usize,
    pub suspect_included: bool,
    /// Distinct suspect reasons among the measured runs, with counts ("errors x2").
    pub reasons: Vec<String>,
}

pub(super) fn runs(export: &JobExport, cell_index: u32, exclude_suspect: bool) -> Runs<'_> {
    let all: Vec<(&ExportRun, &RunMetrics)> = measured(export, cell_index).collect();
    let sel = stats::select_runs(
        all.iter()
            .map(|&(r, m)| ((r, m), !r.suspect_reasons.is_empty())),
        exclude_suspect,
    );
    let hosts = sel
        .used
        .iter()
        .map(|(r, _)| r.db_host_id.as_str())
        .collect();
    let rounds = sel.used.iter().map(|(r, _)| r.repetition).collect();
    let used = sel.used.iter().map(|(_, m)| *m).collect();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for (r, _) in &all {
        for reason in &r.suspect_reasons {
            *reasons.entry(reason.as_str()).or_default() += 1;
        }
    }
    Runs {
        used,
        hosts,
        rounds,
        measured: all.len(),
        total: export
            .runs
            .iter()
            .filter(|r| r.cell_index == cell_index)
            .count(),
        suspect: sel.suspect,
        excluded: sel.excluded,
        suspect_included: sel.suspect_included,
        reasons: reasons
            .into_iter()
            .map(|(r, n)| {
                if n > 1 {
                    format!("{r} x{n}")
                } else {
                    r.to_string()
                }
            })
            .collect(),
    }
}

/// The value of `metric` with the round and host of each used run (runs without the metric
/// are skipped).
pub(super) fn values<'a>(runs: &Runs<'a>, metric: &Metric) -> Vec<Run<'a>> {
    runs.hosts
        .iter()
        .zip(&runs.rounds)
        .zip(&runs.used)
        .map(|((host, round), m)| Run {
            value: metric_value(m, metric),
            round: *round,
            host,
        })
        .filter(|r| r.value.is_finite())
        .collect()
}

/// The cell on each of its hosts, against `base` on the same host; empty when its runs came
/// from one host.
pub(super) fn host_results(mine: &[Run<'_>], base: Option<&[Run<'_>]>) -> Vec<HostResult> {
    let mean_on = |runs: &[Run<'_>], host: &str| {
        let xs: Vec<f64> = runs
            .iter()
            .filter(|r| r.host == host)
            .map(|r| r.value)
            .collect();
        (!xs.is_empty()).then(|| (xs.len(), xs.iter().sum::<f64>() / xs.len() as f64))
    };
    let hosts: std::collections::BTreeSet<&str> = mine.iter().map(|r| r.host).collect();
    if hosts.len() < 2 {
        return Vec::new();
    }
    hosts
        .into_iter()
        .filter_map(|h| {
            let (n, mean) = mean_on(mine, h)?;
            let base_mean = base.and_then(|b| mean_on(b, h)).map(|(_, m)| m);
            Some(HostResult {
                host_id: h.to_string(),
                n: count(n),
                mean,
                pct_change_vs_baseline: base_mean.and_then(|b| stats::pct_change(mean, b)),
            })
        })
        .collect()
}

/// The summary of `metric` over the used runs (runs without the metric are skipped).
pub(super) fn summary(runs: &Runs<'_>, metric: &Metric) -> Option<Summary> {
    let values: Vec<f64> = runs
        .used
        .iter()
        .map(|m| metric_value(m, metric))
        .filter(|v| v.is_finite())
        .collect();
    stats::summarize(&values)
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The fields of a cell's result that do not depend on the metric.
pub(super) fn head(export: &JobExport, cell: &ExportCell, runs: &Runs<'_>) -> CellResult {
    let mine = || {
        export
            .runs
            .iter()
            .filter(|r| r.cell_index == cell.cell_index)
    };
    let tps: Vec<f64> = runs.used.iter().map(|m| m.tps).collect();
    let (tps_mean, tps_stddev) = stats::mean_stddev(&tps).unwrap_or((0.0, 0.0));
    let lat: Vec<f64> = runs.used.iter().map(|m| m.latency_avg_ms).collect();
    CellResult {
        cell_index: cell.cell_index,
        label: cell.label.clone(),
        block_size_kb: cell.block_size_kb,
        wal_block_size_kb: cell.wal_block_size_kb,
        clients: cell.clients,
        proven_block_size: mine().map(|r| r.block_size).max().unwrap_or(0),
        proven_wal_block_size: mine().map(|r| r.wal_block_size).max().unwrap_or(0),
        runs_ok: count(runs.measured),
        runs_total: count(runs.total),
        tps_mean,
        tps_stddev,
        latency_avg_ms_mean: stats::mean_stddev(&lat).map(|(m, _)| m).unwrap_or(0.0),
        is_baseline: cell.is_baseline,
        runs_suspect: count(runs.suspect),
        runs_excluded: count(runs.excluded),
        suspect_included: runs.suspect_included,
        dims_json: cell.dims_json.clone(),
        suspect_reasons: runs.reasons.clone(),
        replicate: cell.replicate,
        series_point: cell.series_point,
        ..Default::default()
    }
}

/// A cell's own statistics (no comparison yet).
pub(super) fn own(summary: Option<&Summary>) -> CellStats {
    let Some(s) = summary else {
        return CellStats::default();
    };
    let (ci95_low, ci95_high) = s.ci95.unwrap_or((s.mean, s.mean));
    CellStats {
        n: count(s.n),
        mean: s.mean,
        stddev: s.stddev,
        cv: s.cv.unwrap_or(0.0),
        ci95_low,
        ci95_high,
        ci95_half_width_pct: s.ci95_half_width_pct(),
        ..Default::default()
    }
}

/// Copies a selection's statistics into the result's main fields.
pub(super) fn put(r: &mut CellResult, s: &CellStats) {
    r.n = s.n;
    r.mean = s.mean;
    r.stddev = s.stddev;
    r.cv = s.cv;
    r.ci95_low = s.ci95_low;
    r.ci95_high = s.ci95_high;
    r.ci95_half_width_pct = s.ci95_half_width_pct;
    r.pct_change_vs_baseline = s.pct_change_vs_baseline;
    r.pct_change_ci95_low = s.pct_change_ci95_low;
    r.pct_change_ci95_high = s.pct_change_ci95_high;
    r.pct_change_ci90_low = s.pct_change_ci90_low;
    r.pct_change_ci90_high = s.pct_change_ci90_high;
    r.p_value = s.p_value;
    r.q_value = s.q_value;
    r.tost_p_value = s.tost_p_value;
    r.tost_q_value = s.tost_q_value;
    r.welch_df = s.welch_df;
    r.zero_variance = s.zero_variance;
    r.verdict = s.verdict.clone();
    r.baseline_mean = s.baseline_mean;
    r.model = s.model.clone();
    r.mde_pct = s.mde_pct;
    r.extra_rounds = s.extra_rounds;
    r.extra_rounds_cannot = s.extra_rounds_cannot;
}
