//! A synthetic job of known truth: its cells, runs and noise (see the module above).

use blocklab_measure::Metric as WorkloadMetric;
use blocklab_measure::job::*;

use super::prng::Prng;

/// What a synthetic job looks like.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Runs per cell (rounds).
    pub n: u32,
    /// Per-run coefficient of variation of throughput, in percent.
    pub cv_pct: f64,
    /// Standard deviation of the per-round step of the drift random walk, in percent.
    pub drift_pct: f64,
    /// True throughput change of each treatment cell after the A/A replicate, in percent.
    pub effects_pct: Vec<f64>,
    /// The job's equivalence band (0 = the default).
    pub equivalence_pct: f64,
    /// Every pgbench column varies (the default); when false only tps does (the other
    /// columns are constant, so they leave the family of comparisons).
    pub all_columns: bool,
    /// The job records its run order as interleaved, so each round is a block (the `rounds`
    /// model); when false it records none and every comparison is Welch's.
    pub rounds_as_blocks: bool,
    /// Share of runs that are disturbed (a checkpoint, a neighbour): their noise has
    /// [`DISTURBED_CV_FACTOR`] times the CV, so the runs' distribution has heavy tails.
    pub disturbed_share: f64,
    /// The job has the A/A replicate cell (the default); without it, the baseline and the
    /// treatment cells only, as a two-cell comparison job is.
    pub replicate: bool,
}

/// How much noisier a disturbed run is than the others.
pub const DISTURBED_CV_FACTOR: f64 = 4.0;

impl Scenario {
    pub fn new(n: u32, cv_pct: f64, drift_pct: f64) -> Scenario {
        Scenario {
            n,
            cv_pct,
            drift_pct,
            effects_pct: vec![3.0, 5.0],
            equivalence_pct: 0.0,
            all_columns: true,
            rounds_as_blocks: false,
            disturbed_share: 0.0,
            replicate: true,
        }
    }
}

const CLIENTS: u32 = 8;

fn cell(i: u32, label: &str, bs: u32, baseline: bool, on: &str) -> ExportCell {
    ExportCell {
        cell_index: i,
        label: label.to_string(),
        block_size_kb: bs,
        wal_block_size_kb: 8,
        clients: CLIENTS,
        is_baseline: baseline,
        dims_json: "{}".into(),
        baseline_cell_index: (!baseline).then_some(0),
        compared_on: on.to_string(),
        replicate: on == "replicate",
        series_point: None,
    }
}

/// One run's pgbench columns for a throughput `tps` (only tps when not `all_columns`).
fn run_metrics(tps: f64, cv: f64, all_columns: bool, rng: &mut Prng) -> RunMetrics {
    let lat = f64::from(CLIENTS) * 1000.0 / tps;
    let checkpoints = WorkloadMetric {
        name: "checkpoints_in_window".into(),
        value: f64::from(u8::from(rng.uniform() < 0.2)),
        unit: "count".into(),
        higher_is_better: false,
    };
    if !all_columns {
        return RunMetrics {
            tps,
            extra: vec![checkpoints],
            ..Default::default()
        };
    }
    let mut noisy = |scale: f64, sd: f64| scale * (sd * rng.normal()).exp();
    RunMetrics {
        tps,
        tps_incl_conn: tps * noisy(0.998, cv / 10.0),
        latency_avg_ms: lat,
        latency_p50_ms: lat * noisy(0.9, cv / 2.0),
        latency_p90_ms: lat * noisy(1.6, cv),
        latency_p99_ms: lat * noisy(3.0, 2.0 * cv),
        latency_p999_ms: lat * noisy(6.0, 3.0 * cv),
        latency_max_ms: lat * noisy(20.0, 5.0 * cv),
        extra: vec![checkpoints],
        ..Default::default()
    }
}

/// A synthetic job drawn from `s`.
pub fn synthetic_job(s: &Scenario, rng: &mut Prng) -> JobExport {
    let mut cells = vec![cell(0, "bs=8K", 8, true, "")];
    let mut effects = vec![0.0];
    if s.replicate {
        cells.push(cell(1, "bs=8K replicate", 8, false, "replicate"));
        effects.push(0.0);
    }
    for (k, e) in s.effects_pct.iter().enumerate() {
        let bs = 16 << k;
        let i = u32::try_from(cells.len()).unwrap_or(u32::MAX);
        cells.push(cell(i, &format!("bs={bs}K"), bs, false, "page size"));
        effects.push(*e);
    }
    let (cv, drift_sd) = (s.cv_pct / 100.0, s.drift_pct / 100.0);
    let mut drift = 1.0;
    let mut runs = Vec::new();
    for round in 0..s.n {
        if round > 0 {
            drift *= (drift_sd * rng.normal()).exp();
        }
        for (c, effect) in effects.iter().enumerate() {
            let disturbed = s.disturbed_share > 0.0 && rng.uniform() < s.disturbed_share;
            let run_cv = if disturbed {
                cv * DISTURBED_CV_FACTOR
            } else {
                cv
            };
            let tps = 1000.0 * (1.0 + effect / 100.0) * drift * (run_cv * rng.normal()).exp();
            runs.push(ExportRun {
                cell_index: u32::try_from(c).unwrap_or(u32::MAX),
                repetition: round,
                sequence: u32::try_from(runs.len()).unwrap_or(u32::MAX),
                state: "done".into(),
                result: Some(run_metrics(tps, cv, s.all_columns, rng)),
                ..Default::default()
            });
        }
    }
    JobExport {
        cells,
        runs,
        run_order: if s.rounds_as_blocks {
            "interleaved".into()
        } else {
            String::new()
        },
        analysis: Some(AnalysisOptions {
            equivalence_pct: s.equivalence_pct,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `k` out of `n` as a share (0 when `n` is 0): the rates the tallies report.
pub(super) fn share(k: u32, n: u32) -> f64 {
    if n == 0 {
        0.0
    } else {
        f64::from(k) / f64::from(n)
    }
}
