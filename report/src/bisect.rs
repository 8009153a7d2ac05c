//! Which side of a change a commit is on, for `blocklab bisect`. A series found that one
//! comparison's effect (say WAL 4K against 8K) differs between two points; bisection measures
//! the same comparison at a commit between them and asks whose effect it has.
//!
//! An effect is the comparison's change as a log ratio `ln(1 + change)` with its 95% interval,
//! which the analysis builds on that scale, so the interval is symmetric there. Two effects
//! differ when the interval of their difference excludes 0, its half-width taken as
//! `sqrt(h1^2 + h2^2)` from the two half-widths (the two jobs' estimates are independent):
//! bisection starts only between ends that differ. A commit is on the side of the middle of
//! the two sides' effects that its effect is on, when its interval about that middle excludes
//! it ([`side`]); otherwise the step is undecided and measures again with more rounds, rather
//! than guess ([`Search`]). The calibration (`bench/bisect-calibration.sh`) measured the rule.

use blocklab_measure::job::CellResult;

/// A compared cell's comparison without its source (`wal=4K c=1 vs wal=8K c=1`): the same at
/// every point of a series and in a one-source job.
pub fn comparison(c: &CellResult) -> String {
    format!(
        "{} vs {}",
        without_source(&c.label),
        without_source(&c.baseline_label)
    )
}

/// `label` without its `src=<name>` part.
fn without_source(label: &str) -> String {
    label
        .split_whitespace()
        .filter(|w| !w.starts_with("src="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A comparison's effect: `ln(1 + change)` and the half-width of its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Effect {
    pub ln: f64,
    pub half: f64,
}

impl Effect {
    /// The effect a compared cell's results give (`None` without a change and its interval).
    pub fn of(c: &CellResult) -> Option<Effect> {
        let ln = |pct: f64| (1.0 + pct / 100.0).ln();
        let (low, high) = (c.pct_change_ci95_low?, c.pct_change_ci95_high?);
        let change = c.pct_change_vs_baseline?;
        if low <= -100.0 || high <= -100.0 || change <= -100.0 {
            return None;
        }
        Some(Effect {
            ln: ln(change),
            half: (ln(high) - ln(low)) / 2.0,
        })
    }

    /// The change in percent.
    pub fn pct(self) -> f64 {
        self.ln.exp_m1() * 100.0
    }

    /// Whether the interval of `self - other` excludes 0.
    pub fn differs_from(self, other: Effect) -> bool {
        (self.ln - other.ln).abs() > self.half.hypot(other.half)
    }
}

/// Where a commit's effect puts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// The effect of the earlier end: the change comes after this commit.
    Before,
    /// The effect of the later end: the change is at or before this commit.
    After,
    /// Neither can be told: why.
    Undecided(String),
}

/// The side of a commit whose effect is `mid`, between ends with `before` and `after`: the
/// side of the middle of the two ends' effects that `mid` is on, when the interval of `mid`
/// less that middle (half-width `sqrt(hm^2 + (hb^2 + ha^2) / 4)`) excludes 0. Measured
/// against the middle, a commit with one end's true effect is put on the other side only
/// when its estimate passes the middle by its own interval (at most 2.5% at one look, less
/// the further apart the ends are); and with the two ends measured alike, the middle is not
/// moved by having chosen ends whose effects differ.
pub fn side(mid: Effect, before: Effect, after: Effect) -> Side {
    let middle = (before.ln + after.ln) / 2.0;
    let half = mid.half.hypot(before.half.hypot(after.half) / 2.0);
    let d = mid.ln - middle;
    if d.abs() <= half {
        return Side::Undecided("its interval holds the middle of the ends' effects".into());
    }
    if (d > 0.0) == (after.ln > before.ln) {
        Side::After
    } else {
        Side::Before
    }
}

/// The most times one commit is measured: each time again with twice the rounds.
pub const ATTEMPTS: u32 = 3;

/// Two estimates of one effect as one, weighted by the inverse of their variances.
fn pooled(a: Effect, b: Effect) -> Effect {
    let (wa, wb) = (a.half.powi(-2), b.half.powi(-2));
    Effect {
        ln: (wa * a.ln + wb * b.ln) / (wa + wb),
        half: (wa + wb).sqrt().recip(),
    }
}

/// The search over a line of commits: index 0 is the earlier end (its effect is the one
/// before the change), index `candidates` the later end, and the change is at one of
/// `1..=candidates`. Each step measures the middle of what is left and places it by [`side`]
/// against the two sides' effects: each end's, pooled with the effects of the commits already
/// placed on its side (the effect is taken to be one before the change and one after it), so
/// the ends sharpen as the search goes. An undecided step measures the same commit again with
/// twice the rounds, at most [`ATTEMPTS`] times, and then the search stops undecided rather
/// than guess. The CLI's `bisect` and the calibration ([`crate::calibration::run_bisections`])
/// drive this one search.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    lo: usize,
    hi: usize,
    attempt: u32,
    base_rounds: u32,
    stopped: bool,
    before: Effect,
    after: Effect,
}

/// Where a search ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchEnd {
    /// The first commit with the later end's effect (its index on the line).
    Found(usize),
    /// No step could place the commit at `lo + (hi - lo) / 2`: the change is after `lo`, at
    /// or before `hi`.
    Undecided { lo: usize, hi: usize },
}

impl Search {
    /// A search over `candidates` commits after the earlier end, whose ends measured
    /// `before` and `after`; each commit first measured at `base_rounds` rounds.
    pub fn new(candidates: usize, base_rounds: u32, before: Effect, after: Effect) -> Search {
        Search {
            lo: 0,
            hi: candidates,
            attempt: 0,
            base_rounds,
            stopped: false,
            before,
            after,
        }
    }

    /// The commit to measure next (its index on the line) and the rounds to measure it at;
    /// `None` when the search is over.
    pub fn next(&self) -> Option<(usize, u32)> {
        (!self.stopped && self.hi - self.lo > 1)
            .then(|| ((self.lo + self.hi) / 2, self.base_rounds << self.attempt))
    }

    /// The effect the measurement [`Search::next`] asked for gave (`None`: its job measured
    /// none), and where it puts the commit.
    pub fn record(&mut self, effect: Option<Effect>) -> Side {
        let Some((m, _)) = self.next() else {
            return Side::Undecided("the search is over".into());
        };
        let placed = match effect {
            Some(e) => side(e, self.before, self.after),
            None => Side::Undecided("no effect was measured".into()),
        };
        match (&placed, effect) {
            (Side::Before, Some(e)) => {
                (self.lo, self.attempt) = (m, 0);
                self.before = pooled(self.before, e);
            }
            (Side::After, Some(e)) => {
                (self.hi, self.attempt) = (m, 0);
                self.after = pooled(self.after, e);
            }
            _ => {
                self.attempt += 1;
                self.stopped = self.attempt >= ATTEMPTS;
            }
        }
        placed
    }

    /// The measurement [`Search::next`] asked for did not end: the search stops there.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// The two sides' effects as pooled so far.
    pub fn sides(&self) -> (Effect, Effect) {
        (self.before, self.after)
    }

    /// How the search ended (or would, were it over now).
    pub fn end(&self) -> SearchEnd {
        if self.hi - self.lo > 1 {
            SearchEnd::Undecided {
                lo: self.lo,
                hi: self.hi,
            }
        } else {
            SearchEnd::Found(self.hi)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(change: f64, low: f64, high: f64) -> CellResult {
        CellResult {
            pct_change_vs_baseline: Some(change),
            pct_change_ci95_low: Some(low),
            pct_change_ci95_high: Some(high),
            ..Default::default()
        }
    }

    #[test]
    fn an_effect_is_a_log_ratio_with_its_half_width() {
        let e = Effect::of(&cell(-50.0, -60.0, -37.5)).expect("effect");
        // ln 0.5, and half of ln(0.625 / 0.4).
        assert!((e.ln - 0.5f64.ln()).abs() < 1e-12, "{e:?}");
        assert!(
            (e.half - (0.625f64 / 0.4).ln() / 2.0).abs() < 1e-12,
            "{e:?}"
        );
        assert!((e.pct() + 50.0).abs() < 1e-9);
        assert!(Effect::of(&CellResult::default()).is_none());
        assert!(Effect::of(&cell(-100.0, -100.0, -90.0)).is_none());
    }

    #[test]
    fn a_commit_takes_the_side_of_the_end_it_matches() {
        let before = Effect {
            ln: 0.0,
            half: 0.03,
        };
        let after = Effect {
            ln: -0.7,
            half: 0.04,
        };
        // The middle is -0.35; with the ends' half-widths of 0.03 and 0.04, a commit's 0.03
        // makes sqrt(0.03^2 + 0.025^2) = 0.0391 about it.
        let at = |ln: f64, half: f64| side(Effect { ln, half }, before, after);
        assert_eq!(at(0.01, 0.03), Side::Before);
        assert_eq!(at(0.5, 0.03), Side::Before);
        assert_eq!(at(-0.69, 0.03), Side::After);
        assert_eq!(at(-0.9, 0.03), Side::After);
        assert!(matches!(at(-0.35, 0.03), Side::Undecided(_)));
        assert!(matches!(at(-0.35, 0.6), Side::Undecided(_)));
        assert!(matches!(at(-0.35 + 0.039, 0.03), Side::Undecided(_)));
        assert_eq!(at(-0.35 + 0.040, 0.03), Side::Before);
        assert_eq!(at(-0.35 - 0.040, 0.03), Side::After);
        // The same with the ends the other way round (an effect that rose).
        assert_eq!(
            side(
                Effect {
                    ln: 0.01,
                    half: 0.03
                },
                after,
                before
            ),
            Side::After
        );
        // Two effects differ when the interval of their difference excludes 0: at the edge, a
        // difference of exactly the combined half-width is not one.
        let e = Effect {
            ln: 0.05,
            half: 0.04,
        };
        assert!(!e.differs_from(Effect {
            ln: 0.0,
            half: 0.03
        }));
        assert!(e.differs_from(Effect {
            ln: -0.0001,
            half: 0.03
        }));
    }

    #[test]
    fn the_search_halves_and_measures_an_undecided_commit_again_with_more_rounds() {
        let e = |ln: f64| Some(Effect { ln, half: 0.05 });
        let (before, after) = (
            Effect {
                ln: 0.0,
                half: 0.05,
            },
            Effect {
                ln: -0.5,
                half: 0.05,
            },
        );
        // 15 candidates, the change at commit 9 (of 1..=15); the second step reads the middle.
        let mut s = Search::new(15, 3, before, after);
        let mut asked = Vec::new();
        while let Some((m, rounds)) = s.next() {
            asked.push((m, rounds));
            let measured = if asked.len() == 2 {
                e(-0.25)
            } else if m >= 9 {
                e(-0.5)
            } else {
                e(0.0)
            };
            s.record(measured);
        }
        assert_eq!(asked, vec![(7, 3), (11, 3), (11, 6), (9, 3), (8, 3)]);
        assert_eq!(s.end(), SearchEnd::Found(9));
        // Each side pooled its end with the commits placed on it: two on each.
        let (b, a) = s.sides();
        assert!((b.half - 0.05 / 3f64.sqrt()).abs() < 1e-12, "{b:?}");
        assert!((a.ln + 0.5).abs() < 1e-12 && (a.half - 0.05 / 3f64.sqrt()).abs() < 1e-12);

        // Three undecided measurements of one commit end the search there.
        let mut s = Search::new(4, 3, before, after);
        let mut rounds = Vec::new();
        while let Some((m, r)) = s.next() {
            assert_eq!(m, 2);
            rounds.push(r);
            assert!(matches!(s.record(None), Side::Undecided(_)));
        }
        assert_eq!(rounds, vec![3, 6, 12]);
        assert_eq!(s.end(), SearchEnd::Undecided { lo: 0, hi: 4 });

        // A job that did not end is not measured again; one candidate needs no step.
        let mut s = Search::new(4, 3, before, after);
        s.stop();
        assert_eq!(s.next(), None);
        assert_eq!(Search::new(1, 3, before, after).next(), None);
        assert_eq!(Search::new(1, 3, before, after).end(), SearchEnd::Found(1));
    }
}
