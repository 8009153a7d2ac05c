//! Which side of a change a commit is on, for `blocklab bisect`. A series found that one
//! comparison's effect (say WAL 4K against 8K) differs between two points; bisection measures
//! the same comparison at a commit between them and asks whose effect it has.
//!
//! An effect is the comparison's change as a log ratio `ln(1 + change)` with its 95% interval,
//! which the analysis builds on that scale, so the interval is symmetric there. Two effects
//! differ when the interval of their difference excludes 0, its half-width taken as
//! `sqrt(h1^2 + h2^2)` from the two half-widths (the two jobs' estimates are independent).
//! A commit is on the side of the end it does not differ from, when it differs from the other;
//! otherwise the step is undecided and measures again with more rounds, rather than guess.

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

/// The side of a commit whose effect is `mid`, between ends with `before` and `after`.
pub fn side(mid: Effect, before: Effect, after: Effect) -> Side {
    match (mid.differs_from(before), mid.differs_from(after)) {
        (false, true) => Side::Before,
        (true, false) => Side::After,
        (true, true) => Side::Undecided("its effect differs from both ends'".into()),
        (false, false) => Side::Undecided("its interval cannot tell the ends apart".into()),
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
        // Two half-widths of 0.03 and 0.04 make 0.05 for the difference.
        let at = |ln: f64, half: f64| side(Effect { ln, half }, before, after);
        assert_eq!(at(0.01, 0.03), Side::Before);
        assert_eq!(at(-0.69, 0.03), Side::After);
        assert!(matches!(at(-0.35, 0.03), Side::Undecided(_)));
        assert!(matches!(at(-0.35, 0.6), Side::Undecided(_)));
        // At the edge: a difference of exactly the combined half-width is not one.
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
}
