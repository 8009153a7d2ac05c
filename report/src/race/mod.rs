//! `search = "race"`: the best cells of a page-size grid with the fewest runs.
//!
//! Every cell runs the minimum of rounds (in randomized blocks); then, after each round (a
//! look, from the minimum to the maximum of rounds), the `k` cells still in the race are
//! fitted in one model, `ln y ~ cell + round` ([`model`]), and the current best is the cell
//! with the best effect. With `α_look = α / looks`, the sequential boundary of `until =
//! "decided"` ([`crate::stats::sequential`]):
//!
//! - A cell is **equivalent** to the best (in the best set) when the `1 − 2·α_look/(k−1)`
//!   interval of its contrast with the best lies inside `±band` (a TOST at that level); this
//!   comes first, so a cell a little but significantly behind stays in the best set.
//! - Otherwise a cell **leaves the race** when its contrast with the best is significantly
//!   worse, one-sided at `α_look / (k·(k−1))`.
//! - The **default cell** (the job's baseline) never leaves. It is marked **beaten** when it is
//!   significantly worse than the band's lower edge (one-sided at `α_look/(k−1)`): a default
//!   within the band of the best is never called beaten for a real but small gap.
//!
//! The race is over when every racing cell other than the best is equivalent to it or is the
//! beaten default; or at the maximum of rounds (or the job's budget, which the scheduler
//! applies).
//!
//! Why these levels. The best is chosen by the same data, so the comparison that could drop a
//! truly best cell is one of those against whichever cell happens to lead; and several cells
//! may be truly best at once (an A/A grid: all of them). Testing every ordered pair of the `k`
//! racing cells at `α_look / (k·(k−1))` bounds, by the union bound, the chance that any truly
//! best cell leaves at a look by `α_look`, and over the looks by `α`, however many cells tie.
//! (Bonferroni against the observed best alone, at `α_look/(k−1)`, protects one true best but
//! drops some cell of a 42-cell A/A grid in about a third of races: the leader is the largest
//! of 42 estimates.) Holm's step-down raises the level of later comparisons, which this bound
//! does not cover when the reference is chosen by the data; a rank test within rounds
//! (Friedman) cannot separate cells at 3 rounds, where most of a grid should leave. The pooled
//! linear model uses the same log-ratio scale as every other verdict and pools the residual
//! variance over all cells.
//!
//! The race is a pure function of the runs: replaying the looks over the rounds gives the
//! same drops the scheduler made, so nothing of the race is stored but the runs.

pub mod model;

use crate::stats::{self, pct_of_log, t_cdf, t_ppf, t_quantile};

/// The rule of a race: its rounds, band and direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    pub min_rounds: u32,
    pub max_rounds: u32,
    /// The equivalence band in % of the best.
    pub band_pct: f64,
    pub higher_is_better: bool,
}

impl Rule {
    /// The level of each look: α over the planned looks.
    pub fn look_alpha(&self) -> f64 {
        stats::sequential::look_alpha(self.min_rounds, self.max_rounds)
    }
}

/// A cell in the race with its measured runs as (round, value).
#[derive(Debug, Clone, PartialEq)]
pub struct Entrant {
    pub cell: u32,
    pub is_default: bool,
    pub runs: Vec<(u32, f64)>,
}

/// A cell against the best at a look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VsBest {
    /// The change against the best, in %.
    pub pct: f64,
    /// Its 95% CI, in %.
    pub ci95: (f64, f64),
    /// One-sided p-value of "worse than the best".
    pub p_worse: f64,
}

/// Where a cell stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The best so far.
    Best,
    /// Equivalent to the best within the band: in the best set.
    Equivalent,
    /// Still racing: neither worse nor equivalent yet.
    Racing,
    /// The default, significantly worse than the best (it stays in the race).
    DefaultBeaten,
    /// Left the race at this round's look.
    Dropped { round: u32 },
    /// No measured run by a look: it cannot race.
    NoRuns { round: u32 },
}

impl Standing {
    /// Still running rounds.
    pub fn in_race(self) -> bool {
        !matches!(self, Standing::Dropped { .. } | Standing::NoRuns { .. })
    }
}

impl std::fmt::Display for Standing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Standing::Best => f.write_str("best"),
            Standing::Equivalent => f.write_str("in the best set"),
            Standing::Racing => f.write_str("racing"),
            Standing::DefaultBeaten => f.write_str("default, beaten"),
            Standing::Dropped { round } => write!(f, "dropped at round {round}"),
            Standing::NoRuns { round } => write!(f, "no runs by round {round}"),
        }
    }
}

/// A cell's standing after the last look.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellStanding {
    pub cell: u32,
    pub is_default: bool,
    pub standing: Standing,
    /// Against the best at the last look it took part in (none for the best).
    pub vs_best: Option<VsBest>,
    /// Its measured runs.
    pub runs: u32,
}

/// One look: the best and every racing cell against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// The rounds the look saw.
    pub round: u32,
    pub best: u32,
    /// (cell, against the best, left the race at this look).
    pub rows: Vec<(u32, VsBest, bool)>,
}

/// How the race stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// More rounds to come.
    Running,
    /// Every racing cell is equivalent to the best, or the beaten default, at this round.
    Decided { round: u32 },
    /// The maximum of rounds, undecided.
    MaxReached { round: u32 },
}

/// A race replayed over its rounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Race {
    pub rule: Rule,
    pub looks: Vec<Look>,
    /// In the entrants' order.
    pub cells: Vec<CellStanding>,
    pub best: Option<u32>,
    pub end: End,
    /// Rounds run (the most of any cell).
    pub rounds: u32,
    /// Measured runs, and what every cell running every round would have taken.
    pub runs_spent: u32,
    pub full_grid_runs: u32,
}

impl Race {
    /// The cells that run the next round.
    pub fn racing(&self) -> Vec<u32> {
        self.cells
            .iter()
            .filter(|c| c.standing.in_race())
            .map(|c| c.cell)
            .collect()
    }

    pub fn of(&self, cell: u32) -> Option<&CellStanding> {
        self.cells.iter().find(|c| c.cell == cell)
    }
}

/// What one look decided for each racing cell (indices into the entrants).
struct Judged {
    best: usize,
    /// (entrant, against the best, worse, equivalent).
    rows: Vec<(usize, VsBest, bool, bool)>,
}

/// Fits the racing entrants' runs of rounds `< round` and judges each against the best;
/// `None` when the model cannot be fitted.
fn judge(entrants: &[Entrant], racing: &[usize], round: u32, rule: &Rule) -> Option<Judged> {
    let mut rounds: Vec<u32> = Vec::new();
    let (mut y, mut cell, mut rnd) = (Vec::new(), Vec::new(), Vec::new());
    for (local, &e) in racing.iter().enumerate() {
        for &(r, v) in &entrants[e].runs {
            if r < round && v > 0.0 && v.is_finite() {
                y.push(v.ln());
                cell.push(local);
                rnd.push(r);
                rounds.push(r);
            }
        }
    }
    rounds.sort_unstable();
    rounds.dedup();
    let rnd: Vec<usize> = rnd
        .iter()
        .map(|r| rounds.binary_search(r).unwrap_or_default())
        .collect();
    let fit = model::fit(&y, &cell, &rnd, racing.len(), rounds.len())?;
    let sign = if rule.higher_is_better { 1.0 } else { -1.0 };
    let best = (0..racing.len())
        .max_by(|&a, &b| (sign * fit.effects[a]).total_cmp(&(sign * fit.effects[b])))?;
    let k = racing.len() as f64;
    let level = rule.look_alpha() / (k - 1.0);
    let drop_level = level / k;
    let (lo_band, hi_band) = stats::log_band(rule.band_pct);
    let mut rows = Vec::new();
    for local in (0..racing.len()).filter(|&l| l != best) {
        let c = fit.contrast(local, best);
        // Worse is a negative `d` whichever the direction.
        let d = sign * c.estimate;
        let below = |x: f64| {
            if c.se > 0.0 {
                t_cdf(x / c.se, c.df)
            } else if x < 0.0 {
                0.0
            } else {
                1.0
            }
        };
        let p_worse = below(d);
        let is_default = entrants[racing[local]].is_default;
        // The default is beaten only beyond the band's lower edge; any other cell leaves when
        // it is worse at the level of every ordered pair.
        let worse = if is_default {
            below(d - lo_band) < level
        } else {
            p_worse < drop_level
        };
        let half95 = t_quantile(c.df) * c.se;
        let half_tost = t_ppf(1.0 - level, c.df) * c.se;
        let equivalent =
            c.estimate - half_tost > lo_band && c.estimate + half_tost < hi_band && c.se > 0.0;
        let vs = VsBest {
            pct: pct_of_log(c.estimate),
            ci95: (
                pct_of_log(c.estimate - half95),
                pct_of_log(c.estimate + half95),
            ),
            p_worse,
        };
        rows.push((racing[local], vs, worse, equivalent));
    }
    Some(Judged {
        best: racing[best],
        rows,
    })
}

/// Replays the race over the rounds `0..complete_rounds` (those every racing cell has
/// finished), looking after each round from the minimum to the maximum.
pub fn race(entrants: &[Entrant], complete_rounds: u32, rule: &Rule) -> Race {
    let mut standing: Vec<Standing> = vec![Standing::Racing; entrants.len()];
    let mut vs_best: Vec<Option<VsBest>> = vec![None; entrants.len()];
    let mut looks = Vec::new();
    let mut best = None;
    let mut end = End::Running;
    let last = complete_rounds.min(rule.max_rounds.max(rule.min_rounds));
    for round in rule.min_rounds.max(1)..=last {
        for (e, s) in standing.iter_mut().enumerate() {
            if s.in_race() && !entrants[e].runs.iter().any(|&(r, v)| r < round && v > 0.0) {
                *s = Standing::NoRuns { round };
            }
        }
        let racing: Vec<usize> = (0..entrants.len())
            .filter(|&e| standing[e].in_race())
            .collect();
        if racing.len() == 1 {
            standing[racing[0]] = Standing::Best;
            vs_best[racing[0]] = None;
            best = Some(entrants[racing[0]].cell);
            end = End::Decided { round };
            break;
        }
        let Some(j) = judge(entrants, &racing, round, rule) else {
            continue;
        };
        best = Some(entrants[j.best].cell);
        standing[j.best] = Standing::Best;
        vs_best[j.best] = None;
        let mut decided = true;
        let mut rows = Vec::new();
        for (e, vs, worse, equivalent) in j.rows {
            vs_best[e] = Some(vs);
            // Equivalent within the band comes first: a cell a little, but significantly,
            // behind the best is in the best set, not out of the race.
            let dropped = worse && !equivalent && !entrants[e].is_default;
            standing[e] = match (equivalent, worse) {
                (true, _) => Standing::Equivalent,
                (false, true) if dropped => Standing::Dropped { round },
                (false, true) => Standing::DefaultBeaten,
                (false, false) => {
                    decided = false;
                    Standing::Racing
                }
            };
            rows.push((entrants[e].cell, vs, dropped));
        }
        looks.push(Look {
            round,
            best: entrants[j.best].cell,
            rows,
        });
        if decided {
            end = End::Decided { round };
            break;
        }
    }
    if end == End::Running && complete_rounds >= rule.max_rounds && !looks.is_empty() {
        end = End::MaxReached { round: last };
    }
    let rounds = entrants
        .iter()
        .flat_map(|e| e.runs.iter().map(|&(r, _)| r + 1))
        .max()
        .unwrap_or(0);
    let runs_spent: usize = entrants.iter().map(|e| e.runs.len()).sum();
    Race {
        rule: *rule,
        looks,
        cells: entrants
            .iter()
            .enumerate()
            .map(|(e, en)| CellStanding {
                cell: en.cell,
                is_default: en.is_default,
                standing: standing[e],
                vs_best: vs_best[e],
                runs: u32::try_from(en.runs.len()).unwrap_or(u32::MAX),
            })
            .collect(),
        best,
        end,
        rounds,
        runs_spent: u32::try_from(runs_spent).unwrap_or(u32::MAX),
        full_grid_runs: rounds.saturating_mul(u32::try_from(entrants.len()).unwrap_or(u32::MAX)),
    }
}

#[cfg(test)]
mod tests;
