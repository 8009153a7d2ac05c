//! Calibration of `search = "race"` ([`crate::race`]): synthetic page-size grids of known
//! truth are raced under a rule, and the race's end is counted against the truth.
//!
//! A grid is 6 data page sizes (1K..32K, the range of `BLCKSZ`) by 7 WAL page sizes (1K..64K):
//! 42 cells, the default 8K/8K. The true effects are the gallery's measured tps changes
//! against 8K (`docs/results/README.md`): WAL from seed 001 (1K −7.3%, 2K +0.7%, 4K −5.6%,
//! 16K +0.9%, 32K +0.2%, 64K −12.4%), data from seed 006 (4K −2.3%) and seed 004 (16K
//! −13.0%); the data sizes the gallery has not measured are assumed: 1K −25%, 2K −10%, 32K
//! −26%. A cell's effect is the product of its data and WAL effects (additive on the log
//! scale). The noise is the calibration's ([`super::synthetic`]): each run is
//! `1000 · (1 + effect) · drift_r · exp(N(0, cv))`, the drift a random walk over the rounds
//! that hits every cell of a round alike.
//!
//! Each race draws every cell's runs for the maximum of rounds, then is replayed as the
//! scheduler runs it: after each round from the minimum, [`race::race`] over the runs so far;
//! the cells still racing run the next round. Since a look sees only the runs of the rounds
//! before it and of the cells still racing, one replay over all the draws makes the same
//! drops at the same rounds ([`run_race`]; the tests hold it to the round-by-round replay,
//! [`replay`]), and a cell that left at round `r` has spent `r` runs.

use super::prng::Prng;
use super::synthetic::share;
use crate::race::{self, End, Entrant, Race, Rule, Standing};
use crate::stats::log_band;

/// Data page sizes in KiB, and their assumed or measured tps change against 8K, in %.
pub const DATA_KB: [u32; 6] = [1, 2, 4, 8, 16, 32];
pub const DATA_EFFECTS_PCT: [f64; 6] = [-25.0, -10.0, -2.3, 0.0, -13.0, -26.0];
/// WAL page sizes in KiB, and their measured tps change against 8K, in %.
pub const WAL_KB: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];
pub const WAL_EFFECTS_PCT: [f64; 7] = [-7.3, 0.7, -5.6, 0.0, 0.9, 0.2, -12.4];

/// The cell of a data and a WAL page size in the gallery grid (data-major).
pub fn grid_cell(data: usize, wal: usize) -> usize {
    data * WAL_KB.len() + wal
}

/// The default cell, 8K/8K.
pub const DEFAULT_CELL: usize = 3 * 7 + 3;

/// The gallery grid's true tps change of every cell against the default, in %.
pub fn gallery_effects() -> Vec<f64> {
    let mut out = Vec::with_capacity(DATA_KB.len() * WAL_KB.len());
    for d in DATA_EFFECTS_PCT {
        for w in WAL_EFFECTS_PCT {
            out.push(((1.0 + d / 100.0) * (1.0 + w / 100.0) - 1.0) * 100.0);
        }
    }
    out
}

/// The gallery grid with the WAL sizes that beat 8K turned around (2K −0.7%, 16K −0.9%, 32K
/// −0.2%): the default is the true best, with close runners-up.
pub fn default_best_effects() -> Vec<f64> {
    let mut out = Vec::with_capacity(DATA_KB.len() * WAL_KB.len());
    for d in DATA_EFFECTS_PCT {
        for w in WAL_EFFECTS_PCT {
            out.push(((1.0 + d / 100.0) * (1.0 - w.abs() / 100.0) - 1.0) * 100.0);
        }
    }
    out
}

/// A race of known truth.
#[derive(Debug, Clone, PartialEq)]
pub struct RaceScenario {
    /// Every cell's true tps change against the default, in %.
    pub effects_pct: Vec<f64>,
    /// The default cell (the job's baseline).
    pub default: usize,
    /// Per-run coefficient of variation, in %.
    pub cv_pct: f64,
    /// Standard deviation of the per-round step of the drift random walk, in %.
    pub drift_pct: f64,
    pub rule: Rule,
}

impl RaceScenario {
    /// The gallery grid under `min`..`max` rounds and a band of `band_pct`.
    pub fn gallery(cv_pct: f64, drift_pct: f64, max: u32, band_pct: f64) -> RaceScenario {
        RaceScenario {
            effects_pct: gallery_effects(),
            default: DEFAULT_CELL,
            cv_pct,
            drift_pct,
            rule: Rule {
                min_rounds: 3,
                max_rounds: max,
                band_pct,
                higher_is_better: true,
            },
        }
    }

    fn max_effect(&self) -> f64 {
        self.effects_pct
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Whether a cell's true effect is the best's.
    pub fn is_true_best(&self, cell: usize) -> bool {
        self.effects_pct[cell] == self.max_effect()
    }

    /// Whether a cell's true effect is within the band of the best's (on the log scale, as
    /// the race's equivalence).
    pub fn within_band_of_best(&self, cell: usize) -> bool {
        let ratio = (1.0 + self.effects_pct[cell] / 100.0) / (1.0 + self.max_effect() / 100.0);
        ratio.ln() > log_band(self.rule.band_pct).0
    }
}

/// One race's runs: `draws[round][cell]`, for the maximum of rounds.
pub fn draw(s: &RaceScenario, rng: &mut Prng) -> Vec<Vec<f64>> {
    let (cv, drift_sd) = (s.cv_pct / 100.0, s.drift_pct / 100.0);
    let mut drift = 1.0;
    (0..s.rule.max_rounds)
        .map(|round| {
            if round > 0 {
                drift *= (drift_sd * rng.normal()).exp();
            }
            s.effects_pct
                .iter()
                .map(|e| 1000.0 * (1.0 + e / 100.0) * drift * (cv * rng.normal()).exp())
                .collect()
        })
        .collect()
}

fn entrants(s: &RaceScenario, draws: &[Vec<f64>], rounds: usize) -> Vec<Entrant> {
    (0..s.effects_pct.len())
        .map(|c| Entrant {
            cell: u32::try_from(c).unwrap_or(u32::MAX),
            is_default: c == s.default,
            runs: draws
                .iter()
                .take(rounds)
                .zip(0u32..)
                .map(|(row, r)| (r, row[c]))
                .collect(),
        })
        .collect()
}

/// How a race ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub end: End,
    /// Every cell's standing at the end.
    pub standings: Vec<Standing>,
    /// The rounds run, the runs measured, and cells × rounds.
    pub rounds: u32,
    pub runs_spent: u32,
    pub full_grid_runs: u32,
}

/// Races the draws: one replay over all of them, each cell charged the rounds it ran.
pub fn run_race(s: &RaceScenario, draws: &[Vec<f64>]) -> Outcome {
    let r = race::race(&entrants(s, draws, draws.len()), s.rule.max_rounds, &s.rule);
    outcome(s, r.end, r.cells.iter().map(|c| c.standing).collect())
}

/// The rounds and runs of a race that ended at `end` with these standings.
fn outcome(s: &RaceScenario, end: End, standings: Vec<Standing>) -> Outcome {
    let rounds = match end {
        End::Decided { round } | End::MaxReached { round } => round,
        End::Running => s.rule.max_rounds,
    };
    let runs_spent = standings
        .iter()
        .map(|s| match s {
            Standing::Dropped { round } | Standing::NoRuns { round } => *round,
            _ => rounds,
        })
        .sum();
    let cells = u32::try_from(standings.len()).unwrap_or(u32::MAX);
    Outcome {
        end,
        standings,
        rounds,
        runs_spent,
        full_grid_runs: rounds * cells,
    }
}

/// The scheduler's way: the minimum of rounds for every cell, then after each round a replay
/// of the race over the runs so far, and one more round for the cells still racing.
pub fn replay(s: &RaceScenario, draws: &[Vec<f64>]) -> Race {
    let rule = &s.rule;
    let mut entrants = entrants(s, draws, rule.min_rounds as usize);
    let mut round = rule.min_rounds;
    loop {
        let r = race::race(&entrants, round, rule);
        if r.end != End::Running || round >= rule.max_rounds {
            return r;
        }
        for cell in r.racing() {
            let row = &draws[round as usize];
            entrants[cell as usize]
                .runs
                .push((round, row[cell as usize]));
        }
        round += 1;
    }
}

/// Races of one scenario, counted against the truth.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RaceTally {
    pub races: u32,
    /// Races whose final racing set holds a cell within the band of the true best, and the
    /// true best itself.
    pub holds_best: u32,
    pub holds_true_best: u32,
    /// Runs measured, the full grid's at the rounds each race ran, and at the maximum.
    pub runs_spent: u64,
    pub full_grid_runs: u64,
    pub max_grid_runs: u64,
    /// Rounds run, summed.
    pub rounds: u64,
    /// Races decided before the maximum of rounds.
    pub decided_before_max: u32,
    /// Whether the default's true effect is within the band of the best's.
    pub default_in_band: bool,
    /// Races ending with the default marked beaten, and with the default decided (the best,
    /// in the best set, or beaten).
    pub default_beaten: u32,
    pub default_decided: u32,
    /// Races that dropped any cell.
    pub any_dropped: u32,
    /// Cells still racing at the end, summed.
    pub racing_at_end: u64,
}

impl RaceTally {
    /// Counts one race's outcome.
    pub fn add(&mut self, s: &RaceScenario, o: &Outcome) {
        let racing = |c: &usize| o.standings[*c].in_race();
        let cells = 0..o.standings.len();
        self.races += 1;
        self.holds_best += u32::from(
            cells
                .clone()
                .filter(racing)
                .any(|c| s.within_band_of_best(c)),
        );
        self.holds_true_best += u32::from(cells.clone().filter(racing).any(|c| s.is_true_best(c)));
        self.runs_spent += u64::from(o.runs_spent);
        self.full_grid_runs += u64::from(o.full_grid_runs);
        self.max_grid_runs += u64::from(s.rule.max_rounds) * o.standings.len() as u64;
        self.rounds += u64::from(o.rounds);
        self.decided_before_max +=
            u32::from(matches!(o.end, End::Decided { round } if round < s.rule.max_rounds));
        self.default_in_band = s.within_band_of_best(s.default);
        let default = o.standings[s.default];
        self.default_beaten += u32::from(default == Standing::DefaultBeaten);
        self.default_decided += u32::from(matches!(
            default,
            Standing::Best | Standing::Equivalent | Standing::DefaultBeaten
        ));
        self.any_dropped += u32::from(
            o.standings
                .iter()
                .any(|s| matches!(s, Standing::Dropped { .. })),
        );
        self.racing_at_end += cells.filter(racing).count() as u64;
    }

    pub fn p_holds_best(&self) -> f64 {
        share(self.holds_best, self.races)
    }
    pub fn p_holds_true_best(&self) -> f64 {
        share(self.holds_true_best, self.races)
    }
    /// Runs measured over the full grid's at the same rounds.
    pub fn runs_ratio(&self) -> f64 {
        ratio(self.runs_spent, self.full_grid_runs)
    }
    /// ... over the full grid's at the maximum of rounds.
    pub fn runs_ratio_max(&self) -> f64 {
        ratio(self.runs_spent, self.max_grid_runs)
    }
    pub fn mean_rounds(&self) -> f64 {
        ratio(self.rounds, u64::from(self.races))
    }
    pub fn mean_runs(&self) -> f64 {
        ratio(self.runs_spent, u64::from(self.races))
    }
    pub fn mean_racing_at_end(&self) -> f64 {
        ratio(self.racing_at_end, u64::from(self.races))
    }
    pub fn p_decided_before_max(&self) -> f64 {
        share(self.decided_before_max, self.races)
    }
    pub fn p_default_beaten(&self) -> f64 {
        share(self.default_beaten, self.races)
    }
    pub fn p_default_decided(&self) -> f64 {
        share(self.default_decided, self.races)
    }
    pub fn p_any_dropped(&self) -> f64 {
        share(self.any_dropped, self.races)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Draws `races` races of `s` from `seed` and counts how they ended.
pub fn run_races(s: &RaceScenario, races: u32, seed: u64) -> RaceTally {
    let mut rng = Prng::new(seed);
    let mut t = RaceTally::default();
    for _ in 0..races {
        let draws = draw(s, &mut rng);
        t.add(s, &run_race(s, &draws));
    }
    t
}

#[cfg(test)]
mod tests;
