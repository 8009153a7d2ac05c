//! Calibration of `until = "decided"`: each synthetic job is drawn with `max` rounds and
//! looked at after every round from `min` on, through the same analysis as a real job (the
//! runs of the first `r` rounds, the verdicts at the look's level), and stops at the first
//! look where every compared cell's tps verdict is faster, slower or equivalent, as the
//! scheduler does. Counted: the verdicts at the stop, A/A false positives at the stop and at
//! any look, and the rounds used.

use blocklab_measure::job::JobExport;

use super::prng::Prng;
use super::synthetic::{Scenario, share, synthetic_job};
use crate::analysis;
use crate::stats::{Metric, sequential};

/// Verdicts and rounds counted over many sequential synthetic jobs of one scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SequentialTally {
    pub jobs: u32,
    /// Jobs that stopped decided before or at the maximum.
    pub decided: u32,
    /// The rounds the jobs used, summed.
    pub rounds: u64,
    /// A/A on tps: faster or slower at the stopping look, and at any look.
    pub aa_tps_false_positives: u32,
    pub aa_tps_false_positives_any_look: u32,
    /// A/A on tps: equivalent at the stopping look.
    pub aa_tps_equivalent: u32,
    /// A/A comparisons over every verdict-bearing pgbench column at the stopping look, and
    /// those judged faster or slower.
    pub aa_comparisons: u32,
    pub aa_false_positives: u32,
    /// Per treatment cell (in `effects_pct` order): tps "faster" at the stop, and "slower".
    pub detected: Vec<u32>,
    pub wrong_direction: Vec<u32>,
}

impl SequentialTally {
    /// Share of jobs whose A/A tps came out faster or slower at the stop.
    pub fn fpr_tps(&self) -> f64 {
        share(self.aa_tps_false_positives, self.jobs)
    }
    /// ... at any look.
    pub fn fpr_tps_any_look(&self) -> f64 {
        share(self.aa_tps_false_positives_any_look, self.jobs)
    }
    /// Share of A/A comparisons (all columns) faster or slower at the stop.
    pub fn fpr(&self) -> f64 {
        share(self.aa_false_positives, self.aa_comparisons)
    }
    pub fn equivalent_tps(&self) -> f64 {
        share(self.aa_tps_equivalent, self.jobs)
    }
    /// Share of jobs where the k-th treatment cell's tps came out faster.
    pub fn power(&self, k: usize) -> f64 {
        share(self.detected.get(k).copied().unwrap_or(0), self.jobs)
    }
    pub fn decided_rate(&self) -> f64 {
        share(self.decided, self.jobs)
    }
    /// The mean number of rounds a job used.
    pub fn mean_rounds(&self) -> f64 {
        if self.jobs == 0 {
            0.0
        } else {
            self.rounds as f64 / f64::from(self.jobs)
        }
    }
}

/// The job as it stood after its first `rounds` rounds.
fn first_rounds(job: &JobExport, rounds: u32) -> JobExport {
    let mut j = job.clone();
    j.runs.retain(|r| r.repetition < rounds);
    j
}

/// Draws `jobs` synthetic jobs of `s` with `max` rounds (`s.n` is ignored), runs each under
/// `until = "decided"` from `min` rounds, and counts the verdicts where it stopped.
pub fn run_sequential(s: &Scenario, min: u32, max: u32, jobs: u32, seed: u64) -> SequentialTally {
    run_looks(s, min, max, jobs, seed, true)
}

/// [`run_sequential`], or with `boundary` false the naive rule: the same looks and stop, each
/// look judged at 0.05 as a fixed-n job would be (what the sequential boundary prevents).
pub fn run_looks(
    s: &Scenario,
    min: u32,
    max: u32,
    jobs: u32,
    seed: u64,
    boundary: bool,
) -> SequentialTally {
    let mut rng = Prng::new(seed);
    let treatments = s.effects_pct.len();
    let mut t = SequentialTally {
        detected: vec![0; treatments],
        wrong_direction: vec![0; treatments],
        ..Default::default()
    };
    let full = Scenario {
        n: max,
        ..s.clone()
    };
    for _ in 0..jobs {
        let mut job = synthetic_job(&full, &mut rng);
        if let Some(a) = job.analysis.as_mut() {
            a.until_decided = boundary;
            a.min_repetitions = min;
            a.max_repetitions = max;
        }
        t.jobs += 1;
        let mut any_look_fp = false;
        let mut stop = None;
        for rounds in min..=max {
            let look = first_rounds(&job, rounds);
            let results = analysis::job_results(&look, None);
            let tps = results
                .iter()
                .find(|(m, _)| *m == Metric::Tps)
                .map(|(_, cells)| cells.clone())
                .unwrap_or_default();
            any_look_fp |= matches!(tps[1].verdict.as_str(), "faster" | "slower");
            let decided = tps[1..].iter().all(|c| sequential::is_decided(&c.verdict));
            if decided || rounds == max {
                t.decided += u32::from(decided);
                stop = Some((rounds, results, tps));
                break;
            }
        }
        let Some((rounds, results, tps)) = stop else {
            continue;
        };
        t.rounds += u64::from(rounds);
        t.aa_tps_false_positives_any_look += u32::from(any_look_fp);
        match tps[1].verdict.as_str() {
            "faster" | "slower" => t.aa_tps_false_positives += 1,
            "equivalent" => t.aa_tps_equivalent += 1,
            _ => {}
        }
        for (metric, cells) in &results {
            if metric.is_descriptive() || cells[1].zero_variance {
                continue;
            }
            t.aa_comparisons += 1;
            t.aa_false_positives +=
                u32::from(matches!(cells[1].verdict.as_str(), "faster" | "slower"));
        }
        for k in 0..treatments {
            match tps[2 + k].verdict.as_str() {
                "faster" => t.detected[k] += 1,
                "slower" => t.wrong_direction[k] += 1,
                _ => {}
            }
        }
    }
    t
}

#[cfg(test)]
mod tests;
