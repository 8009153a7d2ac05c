//! Calibration of the verdicts, measured: synthetic jobs with realistic noise go through the
//! same analysis as real ones ([`crate::analysis::job_results`] on a [`JobExport`]), and the
//! verdicts are counted against the known truth.
//!
//! A synthetic job has four cells: the baseline, an A/A replicate of it (true effect 0), and
//! two cells whose throughput is higher by `effects_pct` (3% and 5% by default). Every run
//! has all of pgbench's columns (latency follows throughput; the percentiles have noise of
//! their own) and a descriptive count. Each run's throughput is
//! `1000 · (1 + effect) · drift_r · exp(N(0, cv))`: per-run noise with the given CV, and a
//! per-round multiplicative drift that is a random walk (`drift_r = drift_{r-1} ·
//! exp(N(0, drift))`) and hits every cell of a round alike, since runs are interleaved. The
//! PRNG is seeded, so every figure is reproducible.
//!
//! [`run_sequential`] does the same for `until = "decided"`: a look after every round, a
//! stop at the first decided one.

use blocklab_measure::Metric as WorkloadMetric;
use blocklab_measure::job::*;

use crate::analysis;
use crate::stats::Metric;

mod prng;
mod sequential;

pub use prng::Prng;
pub use sequential::{SequentialTally, run_looks, run_sequential};

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
}

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
    let mut cells = vec![
        cell(0, "bs=8K", 8, true, ""),
        cell(1, "bs=8K replicate", 8, false, "replicate"),
    ];
    let mut effects = vec![0.0, 0.0];
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
            let tps = 1000.0 * (1.0 + effect / 100.0) * drift * (cv * rng.normal()).exp();
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

/// Verdicts counted over many synthetic jobs of one scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub jobs: u32,
    /// A/A comparisons: the replicate cell, every verdict-bearing pgbench column.
    pub aa_comparisons: u32,
    /// ... with a faster or slower verdict (false positives).
    pub aa_false_positives: u32,
    /// ... equivalent, and inconclusive.
    pub aa_equivalent: u32,
    pub aa_inconclusive: u32,
    /// ... any other verdict (insufficient data, zero variance: none expected).
    pub aa_other: u32,
    /// Jobs with at least one A/A false positive (any column).
    pub aa_jobs_with_false_positive: u32,
    /// A/A on tps alone: p < 0.05 before any correction, and faster/slower verdicts.
    pub aa_tps_raw_p_below_alpha: u32,
    pub aa_tps_false_positives: u32,
    pub aa_tps_equivalent: u32,
    /// Per treatment cell (in `effects_pct` order): tps verdict "faster", and "slower".
    pub detected: Vec<u32>,
    pub wrong_direction: Vec<u32>,
}

impl Tally {
    fn rate(k: u32, n: u32) -> f64 {
        if n == 0 {
            0.0
        } else {
            f64::from(k) / f64::from(n)
        }
    }
    /// False-positive rate per A/A comparison.
    pub fn fpr(&self) -> f64 {
        Tally::rate(self.aa_false_positives, self.aa_comparisons)
    }
    pub fn fpr_tps(&self) -> f64 {
        Tally::rate(self.aa_tps_false_positives, self.jobs)
    }
    pub fn raw_p_rate_tps(&self) -> f64 {
        Tally::rate(self.aa_tps_raw_p_below_alpha, self.jobs)
    }
    pub fn equivalent_tps(&self) -> f64 {
        Tally::rate(self.aa_tps_equivalent, self.jobs)
    }
    /// Share of jobs where the k-th treatment cell's tps came out faster.
    pub fn power(&self, k: usize) -> f64 {
        Tally::rate(self.detected.get(k).copied().unwrap_or(0), self.jobs)
    }
}

/// Draws `jobs` synthetic jobs of `s` from `seed` and counts their verdicts.
pub fn run(s: &Scenario, jobs: u32, seed: u64) -> Tally {
    let mut rng = Prng::new(seed);
    let treatments = s.effects_pct.len();
    let mut t = Tally {
        detected: vec![0; treatments],
        wrong_direction: vec![0; treatments],
        ..Default::default()
    };
    for _ in 0..jobs {
        let job = synthetic_job(s, &mut rng);
        let results = analysis::job_results(&job, None);
        t.jobs += 1;
        let mut any_fp = false;
        for (metric, cells) in &results {
            if metric.is_descriptive() {
                continue;
            }
            let aa = &cells[1];
            if aa.zero_variance {
                // A constant column (only tps varies): not a comparison.
                continue;
            }
            t.aa_comparisons += 1;
            match aa.verdict.as_str() {
                "faster" | "slower" => {
                    t.aa_false_positives += 1;
                    any_fp = true;
                    if *metric == Metric::Tps {
                        t.aa_tps_false_positives += 1;
                    }
                }
                "equivalent" => t.aa_equivalent += 1,
                "inconclusive" => t.aa_inconclusive += 1,
                _ => t.aa_other += 1,
            }
            if *metric != Metric::Tps {
                continue;
            }
            if aa.p_value.is_some_and(|p| p < crate::stats::ALPHA) {
                t.aa_tps_raw_p_below_alpha += 1;
            }
            if aa.verdict == "equivalent" {
                t.aa_tps_equivalent += 1;
            }
            for k in 0..treatments {
                match cells[2 + k].verdict.as_str() {
                    "faster" => t.detected[k] += 1,
                    "slower" => t.wrong_direction[k] += 1,
                    _ => {}
                }
            }
        }
        t.aa_jobs_with_false_positive += u32::from(any_fp);
    }
    t
}

#[cfg(test)]
mod tests;
