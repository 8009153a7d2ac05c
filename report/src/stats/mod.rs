//! Per-cell summaries over repetitions and the comparison against the baseline cell.
//!
//! Method (also in the README and `blocklab results --help`):
//!
//! - A cell's summary over its repetitions: n, mean, sample standard deviation (n-1),
//!   coefficient of variation (stddev / mean) and the 95% confidence interval of the mean,
//!   `mean ± t(0.975, n-1) · stddev / √n` (Student t).
//! - Against the baseline, as a ratio on the log scale ([`ratio`]): the change is
//!   `Δ = ln(level_t / level_b)`, shown as `100·(exp(Δ) - 1)` %, so no interval passes -100%.
//!   The model ([`Model`]) is chosen by the design: in a job whose run order makes every round
//!   a block (interleaved, randomized-block) and with at least 2 rounds holding both cells,
//!   `ln y ~ cell + round` (`+ host` when the runs come from several database hosts); with
//!   several hosts only, `ln y ~ cell + host`; otherwise Welch's comparison with the delta
//!   method (`se(ln mean) ≈ s/(√n·mean)`). A blocked model that cannot separate the cell from
//!   the blocks, or leaves no residual degree of freedom, falls back to Welch. The t-test,
//!   the 95% CI and the equivalence test use the model's `se` and `df`.
//! - Equivalence: two one-sided tests of `Δ` against `(ln(1 - band/100), ln(1 + band/100))`
//!   ([`tost`]): equivalent when the 90% CI of the % change lies inside `±band` %.
//! - Power: the minimum detectable change at 80% power and the rounds an inconclusive
//!   comparison would need ([`Ratio::mde_pct`], [`Ratio::rounds_to_equivalence`]).
//! - Many comparisons: Benjamini–Hochberg q-values across a job's family ([`fdr`]).
//! - Verdict: [`verdict`] (faster, slower, equivalent, inconclusive, ...); under
//!   `until = "decided"` at the look's level ([`sequential`], [`verdict_at`]); "too few runs"
//!   below the calibrated n ([`MIN_RUNS_TO_DECIDE`], [`gated`]).
//! - Suspect runs: see [`SUSPECT_RULE`] and [`select_runs`].
//! - Over a series (versions, commits): the change points of an effect, E-Divisive with means
//!   and a seeded permutation test, each confirmed against the points' own measurement noise
//!   ([`changepoint`], [`e_divisive_measured`]).

pub mod changepoint;
pub mod fdr;
mod linear;
mod metric;
mod power;
pub mod ratio;
pub mod sequential;
pub mod tost;
mod verdict;
mod welch;

pub use changepoint::{
    ChangePoint, ChangePointError, Detection, Precision, e_divisive, e_divisive_measured,
};
pub use metric::{DESCRIPTIVE_UNITS, Metric, StatsError};
pub use power::{MAX_EXTRA_ROUNDS, POWER, log_band, planned_mde_pct};
pub use ratio::{Model, Ratio, Run, compare, delta, pct_of_log};
pub use tost::{Tost, tost};
pub use verdict::{Evidence, MIN_RUNS_TO_DECIDE, Verdict, gated, verdict, verdict_at};
pub use welch::{
    ALPHA, Change, Summary, mean_stddev, pct_change, summarize, t_cdf, t_ppf, t_quantile,
    t_two_sided_p, welch,
};

/// The equivalence band, in percent of the baseline mean, when a job names none.
pub const DEFAULT_EQUIVALENCE_PCT: f64 = 2.0;

/// The documented rule for suspect runs (shown by `blocklab results --help` and the README).
pub const SUSPECT_RULE: &str = "A run is suspect when the coordinator flagged it (a checkpoint \
in the measured window, client CPU saturated, errors). By default every completed run enters its \
cell's statistics; suspect runs are shown with their reasons and counted per cell. When the job \
excludes suspect runs (the spec's suspect_runs = \"exclude\"), they are left out of the statistics, \
unless that would leave the cell with fewer than 2 runs: then all the cell's runs are used and the \
cell is marked (\"included\"); the results then show the statistics over all runs beside them.";

/// Which of a cell's measured runs enter its statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection<T> {
    pub used: Vec<T>,
    /// Suspect runs among the measured ones.
    pub suspect: usize,
    /// Suspect runs left out of `used`.
    pub excluded: usize,
    /// Suspect runs had to be kept because fewer than 2 clean runs remained.
    pub suspect_included: bool,
}

/// Applies [`SUSPECT_RULE`] to a cell's measured runs, given as (value, is_suspect): every
/// run is used unless `exclude_suspect`; then the suspect ones are left out, unless fewer
/// than 2 clean runs would remain.
pub fn select_runs<T>(
    runs: impl IntoIterator<Item = (T, bool)>,
    exclude_suspect: bool,
) -> Selection<T> {
    let runs: Vec<(T, bool)> = runs.into_iter().collect();
    let suspect = runs.iter().filter(|(_, s)| *s).count();
    let clean = runs.len() - suspect;
    if exclude_suspect && suspect > 0 && clean >= 2 {
        Selection {
            used: runs
                .into_iter()
                .filter(|(_, s)| !s)
                .map(|(v, _)| v)
                .collect(),
            suspect,
            excluded: suspect,
            suspect_included: false,
        }
    } else {
        Selection {
            used: runs.into_iter().map(|(v, _)| v).collect(),
            suspect,
            excluded: 0,
            suspect_included: exclude_suspect && suspect > 0,
        }
    }
}

#[cfg(test)]
mod tests;
