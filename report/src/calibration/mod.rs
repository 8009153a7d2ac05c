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
//!
//! [`run_races`] does it for `search = "race"` over a page-size grid ([`crate::race`]), and
//! [`run_bisections`] for `blocklab bisect` over a line of commits ([`crate::bisect`]).

use crate::analysis;
use crate::stats::Metric;

mod bisect;
mod prng;
mod race;
mod sequential;
mod synthetic;

pub use bisect::{BisectScenario, BisectTally, build_bound, run_bisection, run_bisections};
pub use prng::Prng;
pub use race::{
    DATA_EFFECTS_PCT, DATA_KB, DEFAULT_CELL, Outcome, RaceScenario, RaceTally, WAL_EFFECTS_PCT,
    WAL_KB, default_best_effects, draw, gallery_effects, grid_cell, replay, run_race, run_races,
};
pub use sequential::{SequentialTally, run_looks, run_sequential};
pub use synthetic::{Scenario, synthetic_job};

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
    /// ... that the test alone would call faster or slower, before the "too few runs" gate
    /// ([`crate::stats::MIN_RUNS_TO_DECIDE`]): what the gate is calibrated on.
    pub aa_ungated_false_positives: u32,
    pub aa_tps_ungated_false_positives: u32,
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
    /// False-positive rate per A/A comparison.
    pub fn fpr(&self) -> f64 {
        synthetic::share(self.aa_false_positives, self.aa_comparisons)
    }
    pub fn fpr_tps(&self) -> f64 {
        synthetic::share(self.aa_tps_false_positives, self.jobs)
    }
    /// The false-positive rates the tests give before the "too few runs" gate.
    pub fn fpr_ungated(&self) -> f64 {
        synthetic::share(self.aa_ungated_false_positives, self.aa_comparisons)
    }
    pub fn fpr_tps_ungated(&self) -> f64 {
        synthetic::share(self.aa_tps_ungated_false_positives, self.jobs)
    }
    pub fn raw_p_rate_tps(&self) -> f64 {
        synthetic::share(self.aa_tps_raw_p_below_alpha, self.jobs)
    }
    pub fn equivalent_tps(&self) -> f64 {
        synthetic::share(self.aa_tps_equivalent, self.jobs)
    }
    /// Share of jobs where the k-th treatment cell's tps came out faster.
    pub fn power(&self, k: usize) -> f64 {
        synthetic::share(self.detected.get(k).copied().unwrap_or(0), self.jobs)
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
            if ungated_false_positive(aa) {
                t.aa_ungated_false_positives += 1;
                if *metric == Metric::Tps {
                    t.aa_tps_ungated_false_positives += 1;
                }
            }
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

/// Whether the tests alone call a comparison faster or slower, gate or not: not shown
/// equivalent, q below ALPHA and the 95% CI of the change clear of 0.
pub fn ungated_false_positive(c: &blocklab_measure::job::CellResult) -> bool {
    let alpha = crate::stats::ALPHA;
    let equivalent = c.tost_q_value.is_some_and(|q| q < alpha);
    let significant = c.q_value.is_some_and(|q| q < alpha);
    let clear = match (c.pct_change_ci95_low, c.pct_change_ci95_high) {
        (Some(lo), Some(hi)) => lo > 0.0 || hi < 0.0,
        _ => false,
    };
    !equivalent && significant && clear
}

#[cfg(test)]
mod tests;
