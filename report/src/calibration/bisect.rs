//! Calibration of `blocklab bisect`: a line of commits of known truth (the compared cell's
//! change is `before_pct` up to one commit and `after_pct` from it on), searched and placed by
//! the same [`Search`] as the CLI's bisection. Each measurement is
//! a synthetic two-cell job (the baseline and the compared cell, rounds as blocks, the
//! verdict calibration's noise) through the same analysis as a real job; the two ends are
//! measured once at the series' rounds, as the series measured them. Counted: bisections that
//! cannot start (the ends' effects do not differ), the commit found right, wrong, or none
//! (undecided), and the jobs, builds (distinct commits measured) and rounds spent.

use std::collections::BTreeSet;

use super::prng::Prng;
use super::synthetic::{Scenario, share, synthetic_job};
use crate::analysis;
use crate::bisect::{Effect, Search, SearchEnd};
use crate::stats::Metric;

/// A line of commits and the noise of the lab that measures them.
#[derive(Debug, Clone, PartialEq)]
pub struct BisectScenario {
    /// Commits after the earlier end, up to and with the later end.
    pub candidates: usize,
    /// Rounds of the series at each end, and of a commit's first measurement.
    pub rounds: u32,
    pub cv_pct: f64,
    pub drift_pct: f64,
    /// The compared cell's true change before the changing commit, and from it on.
    pub before_pct: f64,
    pub after_pct: f64,
}

/// Outcomes counted over many bisections of one scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BisectTally {
    pub bisections: u32,
    /// The ends' effects did not differ at 95%: `bisect` refuses to start.
    pub refused: u32,
    /// Of the started ones: the changing commit named, another commit named, none named.
    pub right: u32,
    pub wrong: u32,
    pub undecided: u32,
    /// Over the started ones: jobs (measurements), builds (distinct commits) and rounds.
    pub jobs: u64,
    pub builds: u64,
    pub rounds: u64,
    pub max_builds: u32,
    /// Started bisections that built more than ceil(log2 N) + 2 commits.
    pub over_bound: u32,
}

impl BisectTally {
    pub fn started(&self) -> u32 {
        self.bisections - self.refused
    }
    /// Shares of the started bisections.
    pub fn right_rate(&self) -> f64 {
        share(self.right, self.started())
    }
    pub fn wrong_rate(&self) -> f64 {
        share(self.wrong, self.started())
    }
    pub fn undecided_rate(&self) -> f64 {
        share(self.undecided, self.started())
    }
    pub fn over_bound_rate(&self) -> f64 {
        share(self.over_bound, self.started())
    }
    pub fn refused_rate(&self) -> f64 {
        share(self.refused, self.bisections)
    }
    /// Means per started bisection.
    pub fn mean(&self, total: u64) -> f64 {
        let n = self.started();
        if n == 0 {
            0.0
        } else {
            total as f64 / f64::from(n)
        }
    }
}

/// The bound the issue sets on builds: ceil(log2 N) + 2 for N candidates.
pub fn build_bound(candidates: usize) -> u32 {
    candidates.next_power_of_two().trailing_zeros() + 2
}

/// The effect one synthetic two-cell job of `rounds` rounds measures for a true change of
/// `pct` (`None` when the analysis gives no interval).
fn measure(s: &BisectScenario, pct: f64, rounds: u32, rng: &mut Prng) -> Option<Effect> {
    let scenario = Scenario {
        effects_pct: vec![pct],
        all_columns: false,
        rounds_as_blocks: true,
        replicate: false,
        ..Scenario::new(rounds, s.cv_pct, s.drift_pct)
    };
    let job = synthetic_job(&scenario, rng);
    let results = analysis::job_results(&job, None);
    let (_, cells) = results.iter().find(|(m, _)| *m == Metric::Tps)?;
    cells.iter().find(|c| !c.is_baseline).and_then(Effect::of)
}

/// One bisection with the change at commit `at` (of `1..=candidates`), counted into `t`.
pub fn run_bisection(s: &BisectScenario, at: usize, rng: &mut Prng, t: &mut BisectTally) {
    t.bisections += 1;
    let ends = (
        measure(s, s.before_pct, s.rounds, rng),
        measure(s, s.after_pct, s.rounds, rng),
    );
    let (Some(before), Some(after)) = ends else {
        t.refused += 1;
        return;
    };
    if !before.differs_from(after) {
        t.refused += 1;
        return;
    }
    let mut search = Search::new(s.candidates, s.rounds, before, after);
    let mut built = BTreeSet::new();
    while let Some((m, rounds)) = search.next() {
        let truth = if m >= at { s.after_pct } else { s.before_pct };
        search.record(measure(s, truth, rounds, rng));
        built.insert(m);
        t.jobs += 1;
        t.rounds += u64::from(rounds);
    }
    let builds = u32::try_from(built.len()).unwrap_or(u32::MAX);
    t.builds += u64::from(builds);
    t.max_builds = t.max_builds.max(builds);
    t.over_bound += u32::from(builds > build_bound(s.candidates));
    match search.end() {
        SearchEnd::Found(i) if i == at => t.right += 1,
        SearchEnd::Found(_) => t.wrong += 1,
        SearchEnd::Undecided { .. } => t.undecided += 1,
    }
}

/// `bisections` bisections of `s` from `seed`, the changing commit drawn uniformly.
pub fn run_bisections(s: &BisectScenario, bisections: u32, seed: u64) -> BisectTally {
    let mut rng = Prng::new(seed);
    let mut t = BisectTally::default();
    for _ in 0..bisections {
        let at = 1 + ((rng.uniform() * s.candidates as f64) as usize).min(s.candidates - 1);
        run_bisection(s, at, &mut rng, &mut t);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(cv_pct: f64, after_pct: f64) -> BisectScenario {
        BisectScenario {
            candidates: 15,
            rounds: 3,
            cv_pct,
            drift_pct: 0.5,
            before_pct: 0.0,
            after_pct,
        }
    }

    #[test]
    fn the_bound_is_ceil_log2_plus_two() {
        assert_eq!(build_bound(15), 6);
        assert_eq!(build_bound(16), 6);
        assert_eq!(build_bound(17), 7);
        assert_eq!(build_bound(1), 2);
    }

    #[test]
    fn a_large_change_is_found_within_the_bound_and_a_tiny_one_is_not_started() {
        // -20% at a 2% CV: the ends always differ, the commit is named, within the bound.
        let t = run_bisections(&scenario(2.0, -20.0), 200, 7);
        assert_eq!(t.refused, 0, "{t:?}");
        assert!(t.right_rate() >= 0.95, "{t:?}");
        assert!(t.max_builds <= build_bound(15), "{t:?}");
        // -0.5% at a 5% CV: three rounds cannot tell the ends apart, so bisect mostly refuses.
        let t = run_bisections(&scenario(5.0, -0.5), 200, 7);
        assert!(t.refused_rate() >= 0.8, "{t:?}");
        // Seeded: the same figures again.
        assert_eq!(
            run_bisections(&scenario(2.0, -5.0), 50, 3),
            run_bisections(&scenario(2.0, -5.0), 50, 3)
        );
    }
}
