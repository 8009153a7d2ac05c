//! What a comparison says, in plain words, from its tests and their q-values.

use super::metric::Metric;
use super::ratio::Ratio;
use super::welch::ALPHA;

/// The verdict of a cell against its baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Baseline,
    /// Better in the metric's direction: q < ALPHA and the 95% CI of the change excludes 0.
    Faster,
    Slower,
    /// The change is inside the equivalence band: TOST q < ALPHA (its 90% CI inside ±band).
    Equivalent,
    /// Neither shown.
    Inconclusive,
    /// Fewer runs on a side than [`MIN_RUNS_TO_DECIDE`]: below the n the lab has calibrated,
    /// no verdict is given, whatever the test says; the change, its CI and the MDE are shown.
    TooFewRuns,
    /// Either side has fewer than 2 runs, or the cell has no baseline.
    InsufficientData,
    /// A count, share, size or per-transaction cost: the change is shown, not judged.
    NoVerdict,
    /// Both sides have zero variance: no test; the means are equal or they differ.
    ZeroVariance {
        identical: bool,
    },
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::TooFewRuns => "too few runs",
            Verdict::InsufficientData => "insufficient data",
            Verdict::NoVerdict => "no verdict",
            Verdict::ZeroVariance { identical: true } => "identical, zero variance",
            Verdict::ZeroVariance { identical: false } => "differs, zero variance",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fewest runs on each side of a comparison for a verdict of faster, slower, equivalent
/// or inconclusive. With 2 runs a side the variance of each rests on one degree of freedom:
/// the calibration (`bench/verdict-calibration.sh`, README "Calibration, measured") finds the
/// A/A false-positive rate above 5% at n = 2 when one run in ten is disturbed, and at or
/// below it from n = 3 on, with and without blocks.
pub const MIN_RUNS_TO_DECIDE: usize = 3;

/// `v` as given to a comparison whose smaller side has `n_min` runs: below
/// [`MIN_RUNS_TO_DECIDE`] a judgement (faster, slower, equivalent, inconclusive) becomes
/// [`Verdict::TooFewRuns`]; the other verdicts stay.
pub fn gated(v: Verdict, n_min: usize) -> Verdict {
    match v {
        Verdict::Faster | Verdict::Slower | Verdict::Equivalent | Verdict::Inconclusive
            if n_min < MIN_RUNS_TO_DECIDE =>
        {
            Verdict::TooFewRuns
        }
        v => v,
    }
}

/// What a verdict is made from: the comparison and the q-values of its two tests across the
/// job's family (`None` when the comparison is not in the family).
#[derive(Debug, Clone, Copy, Default)]
pub struct Evidence<'a> {
    /// The comparison on the log scale; `None` when either side has fewer than 2 runs.
    pub change: Option<&'a Ratio>,
    /// Benjamini–Hochberg q-value of the comparison's p-value.
    pub q: Option<f64>,
    /// Benjamini–Hochberg q-value of the TOST p-value.
    pub tost_q: Option<f64>,
}

/// The verdict for a treatment cell, in this order: insufficient data (no comparison); zero
/// variance on both sides; no verdict for a descriptive metric; equivalent when the TOST
/// q-value is below ALPHA (a change shown to be inside the band is not one the band counts,
/// even when it is also significant); faster or slower when the q-value is below ALPHA and
/// the 95% CI of the change excludes 0; otherwise inconclusive.
pub fn verdict(metric: &Metric, e: Evidence<'_>) -> Verdict {
    verdict_at(metric, e, ALPHA)
}

/// [`verdict`] with the q-values compared with `alpha` instead of ALPHA: the level of a look
/// under the sequential boundary ([`super::sequential`]).
pub fn verdict_at(metric: &Metric, e: Evidence<'_>, alpha: f64) -> Verdict {
    let Some(c) = e.change else {
        return Verdict::InsufficientData;
    };
    if c.zero_variance {
        return Verdict::ZeroVariance {
            identical: c.identical,
        };
    }
    if metric.is_descriptive() {
        return Verdict::NoVerdict;
    }
    if e.tost_q.is_some_and(|q| q < alpha) {
        return Verdict::Equivalent;
    }
    if e.q.is_some_and(|q| q < alpha) && c.excludes_zero() {
        if (c.log_ratio > 0.0) == metric.higher_is_better() {
            Verdict::Faster
        } else {
            Verdict::Slower
        }
    } else {
        Verdict::Inconclusive
    }
}
