//! Per-cell summaries over repetitions and the comparison against the baseline cell.
//!
//! Method (also in the README and `blocklab results --help`):
//!
//! - A cell's summary over its repetitions: n, mean, sample standard deviation (n-1),
//!   coefficient of variation (stddev / mean) and the 95% confidence interval of the mean,
//!   `mean ± t(0.975, n-1) · stddev / √n` (Student t).
//! - Against the baseline: Welch's unequal-variance t-test. The difference of means
//!   `d = mean_t - mean_b` has standard error `se = √(s_t²/n_t + s_b²/n_b)` and
//!   Welch–Satterthwaite degrees of freedom; the two-sided p-value is `2·(1 - T_df(|d/se|))`
//!   and the 95% CI of the difference is `d ± t(0.975, df)·se`. The % change is
//!   `100·d / mean_b` and its CI is the CI of the difference divided by `mean_b`: this treats
//!   the baseline mean as exact, which understates the interval when the baseline itself is
//!   noisy (Fieller's interval would not); it is the usual approximation and is fine when
//!   the baseline's CV is small, which the table shows.
//! - A job run on several database hosts (`placement.db_hosts`): the host is a block, and the
//!   change is estimated within hosts by the additive model `y = μ + cell + host + ε`
//!   ([`blocked()`]); its se and df replace Welch's in the test, the CIs and the equivalence
//!   test.
//! - Equivalence: two one-sided tests against `±band·mean_b/100` on the difference, with the
//!   same se and df ([`tost`]).
//! - Many comparisons: Benjamini–Hochberg q-values across a job's family ([`fdr`]).
//! - Verdict: [`verdict`] (faster, slower, equivalent, inconclusive, ...).
//! - Suspect runs: see [`SUSPECT_RULE`] and [`select_runs`].

mod blocked;
pub mod fdr;
mod metric;
pub mod tost;
mod verdict;
mod welch;

pub use blocked::blocked;
pub use metric::{DESCRIPTIVE_UNITS, Metric, StatsError};
pub use tost::{Tost, tost};
pub use verdict::{Evidence, Verdict, verdict};
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
