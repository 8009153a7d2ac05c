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
//! - Equivalence: two one-sided tests against `±band·mean_b/100` on the difference, with the
//!   same se and df ([`tost`]).
//! - Many comparisons: Benjamini–Hochberg q-values across a job's family ([`fdr`]).
//! - Verdict: [`verdict`] (faster, slower, equivalent, inconclusive, ...).
//! - Suspect runs: see [`SUSPECT_RULE`] and [`select_runs`].

use statrs::distribution::{ContinuousCDF, StudentsT};

pub mod fdr;
mod metric;
pub mod tost;
mod verdict;

pub use metric::{DESCRIPTIVE_UNITS, Metric, StatsError};
pub use tost::{Tost, tost};
pub use verdict::{Evidence, Verdict, verdict};

/// Significance level of the verdict; the intervals are `1 - ALPHA` (95%), the TOST interval
/// `1 - 2·ALPHA` (90%).
pub const ALPHA: f64 = 0.05;

/// The equivalence band, in percent of the baseline mean, when a job names none.
pub const DEFAULT_EQUIVALENCE_PCT: f64 = 2.0;

/// The documented rule for suspect runs (shown by `blocklab results --help` and the README).
pub const SUSPECT_RULE: &str = "A run is suspect when the coordinator flagged it (a checkpoint \
in the measured window, client CPU saturated, errors). By default every completed run enters its \
cell's statistics; suspect runs are shown with their reasons and counted per cell. When the job \
excludes suspect runs (the spec's suspect = \"exclude\"), they are left out of the statistics, \
unless that would leave the cell with fewer than 2 runs: then all the cell's runs are used and the \
cell is marked (\"included\"); the results then show the statistics over all runs beside them.";

/// Mean and sample standard deviation (n-1); `None` for an empty sample.
pub fn mean_stddev(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let sd = if xs.len() < 2 {
        0.0
    } else {
        (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    Some((mean, sd))
}

/// Percent change of `value` relative to `baseline`; `None` when the baseline is zero.
pub fn pct_change(value: f64, baseline: f64) -> Option<f64> {
    (baseline != 0.0).then(|| (value - baseline) / baseline * 100.0)
}

/// The `p` quantile of Student's t with `df` degrees of freedom.
pub fn t_ppf(p: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

/// The `1 - ALPHA/2` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(df: f64) -> f64 {
    t_ppf(1.0 - ALPHA / 2.0, df)
}

/// `P(T ≤ t)` for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|d| d.cdf(t))
        .unwrap_or(f64::NAN)
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom (from the lower tail, so
/// small p-values keep their digits).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    (2.0 * t_cdf(-t.abs(), df)).clamp(0.0, 1.0)
}

/// A cell's metric over its repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n-1); 0 for a single run.
    pub stddev: f64,
    /// stddev / mean; `None` for n < 2 or a zero mean.
    pub cv: Option<f64>,
    /// 95% confidence interval of the mean (Student t, n-1 df); `None` for n < 2.
    pub ci95: Option<(f64, f64)>,
}

impl Summary {
    /// Half-width of the 95% CI in percent of the mean; `None` for n < 2 or a zero mean.
    pub fn ci95_half_width_pct(&self) -> Option<f64> {
        let (_, high) = self.ci95?;
        (self.mean != 0.0).then(|| 100.0 * (high - self.mean) / self.mean.abs())
    }
}

/// Summarises a sample; `None` when it is empty.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    let (mean, stddev) = mean_stddev(xs)?;
    let n = xs.len();
    let ci95 = (n >= 2).then(|| {
        let half = t_quantile(n as f64 - 1.0) * stddev / (n as f64).sqrt();
        (mean - half, mean + half)
    });
    Some(Summary {
        n,
        mean,
        stddev,
        cv: (n >= 2 && mean != 0.0).then(|| stddev / mean),
        ci95,
    })
}

/// A treatment cell against its baseline (Welch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    /// mean_t - mean_b.
    pub diff: f64,
    /// Standard error of the difference, `√(s_t²/n_t + s_b²/n_b)`.
    pub se: f64,
    /// 95% CI of the difference of means.
    pub diff_ci95: (f64, f64),
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    pub t: f64,
    /// Two-sided p-value of Welch's t-test; NaN when both sides have zero variance.
    pub p_value: f64,
    /// Both sides have zero variance: there is no test, only the point difference.
    pub zero_variance: bool,
    /// 100·diff / mean_b and its CI (the CI of the difference over mean_b); `None` when the
    /// baseline mean is zero.
    pub pct: Option<f64>,
    pub pct_ci95: Option<(f64, f64)>,
}

/// Welch's comparison of `treat` against `base`; `None` when either has fewer than 2 runs.
///
/// When both samples have zero variance the test is degenerate: there is no p-value (NaN),
/// `zero_variance` is set, the CI is the point difference and df = n_b + n_t - 2.
pub fn welch(base: &Summary, treat: &Summary) -> Option<Change> {
    if base.n < 2 || treat.n < 2 {
        return None;
    }
    let (nb, nt) = (base.n as f64, treat.n as f64);
    let vb = base.stddev.powi(2) / nb;
    let vt = treat.stddev.powi(2) / nt;
    let se = (vb + vt).sqrt();
    let diff = treat.mean - base.mean;
    let zero_variance = se <= 0.0;
    let (df, t, p_value, half) = if !zero_variance {
        let df = (vb + vt).powi(2) / (vb.powi(2) / (nb - 1.0) + vt.powi(2) / (nt - 1.0));
        let t = diff / se;
        (df, t, t_two_sided_p(t, df), t_quantile(df) * se)
    } else {
        (nb + nt - 2.0, f64::NAN, f64::NAN, 0.0)
    };
    let diff_ci95 = (diff - half, diff + half);
    let scale = |x: f64| 100.0 * x / base.mean;
    let pct_ok = base.mean != 0.0;
    Some(Change {
        diff,
        se,
        diff_ci95,
        df,
        t,
        p_value,
        zero_variance,
        pct: pct_ok.then(|| scale(diff)),
        pct_ci95: pct_ok.then(|| (scale(diff_ci95.0), scale(diff_ci95.1))),
    })
}

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
