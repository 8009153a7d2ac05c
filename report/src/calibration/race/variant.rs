//! Rule changes tried on the same draws: the race's looks as [`crate::race::race`] makes them
//! (one model of the racing cells, the best by its effect, each other cell against it), with
//! two changes that can be switched on. With both off it is the race itself (the tests hold it
//! to [`super::run_race`]).

use super::{Outcome, RaceScenario, outcome};
use crate::race::{End, Standing, model};
use crate::stats::{log_band, t_cdf, t_ppf};

/// What differs from the race's rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Variant {
    /// A cell leaves when it is significantly worse than the best at the look's level split
    /// over every ordered pair of the `k` racing cells (`k·(k − 1)`), not over the `m = k − 1`
    /// cells compared with the best: then, with every cell equal, a look drops any cell with
    /// probability at most the look's level (the best is the largest of `k` estimates, and
    /// the largest gap is one of the pairs). The equivalence keeps its level.
    pub all_pairs: bool,
    /// The default is beaten only when it is significantly worse than the band's edge (the
    /// contrast below `−band`, one-sided at the look's level over `m`); a default significantly
    /// but not that far behind races on.
    pub default_beyond_band: bool,
}

impl Variant {
    /// A short name for the tables.
    pub fn name(&self) -> &'static str {
        match (self.all_pairs, self.default_beyond_band) {
            (false, false) => "as is",
            (true, false) => "all pairs",
            (false, true) => "default beyond band",
            (true, true) => "all pairs, default beyond band",
        }
    }
}

/// Races the draws of `s` under the race's rule changed by `v`.
pub fn run_variant(s: &RaceScenario, draws: &[Vec<f64>], v: Variant) -> Outcome {
    let rule = &s.rule;
    let cells = s.effects_pct.len();
    let mut standing = vec![Standing::Racing; cells];
    let mut end = End::Running;
    let mut looked = false;
    let sign = if rule.higher_is_better { 1.0 } else { -1.0 };
    let (lo_band, hi_band) = log_band(rule.band_pct);
    // The band's edge on the worse side, in the direction-free scale where worse is negative.
    let edge = if rule.higher_is_better {
        lo_band
    } else {
        -hi_band
    };
    for round in rule.min_rounds.max(1)..=rule.max_rounds.min(draws.len() as u32) {
        let racing: Vec<usize> = (0..cells).filter(|&c| standing[c].in_race()).collect();
        if racing.len() == 1 {
            standing[racing[0]] = Standing::Best;
            end = End::Decided { round };
            break;
        }
        let (mut y, mut cell, mut rnd) = (Vec::new(), Vec::new(), Vec::new());
        for (local, &c) in racing.iter().enumerate() {
            for (r, row) in draws.iter().take(round as usize).enumerate() {
                y.push(row[c].ln());
                cell.push(local);
                rnd.push(r);
            }
        }
        let Some(fit) = model::fit(&y, &cell, &rnd, racing.len(), round as usize) else {
            continue;
        };
        looked = true;
        let Some(best) = (0..racing.len())
            .max_by(|&a, &b| (sign * fit.effects[a]).total_cmp(&(sign * fit.effects[b])))
        else {
            continue;
        };
        let m = (racing.len() - 1) as f64;
        let level = rule.look_alpha() / m;
        let drop_level = if v.all_pairs {
            rule.look_alpha() / (m * (m + 1.0))
        } else {
            level
        };
        standing[racing[best]] = Standing::Best;
        let mut decided = true;
        for local in (0..racing.len()).filter(|&l| l != best) {
            let c = fit.contrast(local, best);
            let d = sign * c.estimate;
            let p_below = |x: f64| {
                if c.se > 0.0 {
                    t_cdf(x / c.se, c.df)
                } else if x < 0.0 {
                    0.0
                } else {
                    1.0
                }
            };
            let half = t_ppf(1.0 - level, c.df) * c.se;
            let equivalent =
                c.estimate - half > lo_band && c.estimate + half < hi_band && c.se > 0.0;
            let e = racing[local];
            let is_default = e == s.default;
            let beaten = if v.default_beyond_band {
                p_below(d - edge) < level
            } else {
                p_below(d) < level
            };
            standing[e] = if equivalent {
                Standing::Equivalent
            } else if is_default && beaten {
                Standing::DefaultBeaten
            } else if !is_default && p_below(d) < drop_level {
                Standing::Dropped { round }
            } else {
                decided = false;
                Standing::Racing
            };
        }
        if decided {
            end = End::Decided { round };
            break;
        }
    }
    if end == End::Running && looked {
        end = End::MaxReached {
            round: rule.max_rounds,
        };
    }
    outcome(s, end, standing)
}
