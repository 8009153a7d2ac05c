//! Equivalence: two one-sided tests (TOST) of the difference of means against a band in
//! percent of the baseline mean, with Welch's standard error and degrees of freedom.
//!
//! With `δ = band·|mean_b|/100`, `d = mean_t - mean_b`, Welch's `se` and `df`:
//! `p_lower = 1 - T_df((d + δ)/se)` tests H0 `d ≤ -δ`, `p_upper = T_df((d - δ)/se)` tests
//! H0 `d ≥ δ`, and the TOST p-value is the larger of the two. It is below `ALPHA` exactly
//! when the `1 - 2·ALPHA` (90%) CI of the difference, `d ± t(0.95, df)·se`, lies inside
//! `(-δ, δ)`. This is `statsmodels.stats.weightstats.ttost_ind(treat, base, -δ, δ,
//! usevar="unequal")`. δ is taken as exact from the baseline mean, as the CI of the % change
//! is.

use super::welch::{ALPHA, Change, Summary, t_cdf, t_ppf};

/// The equivalence test of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tost {
    /// max(p_lower, p_upper).
    pub p_value: f64,
    pub p_lower: f64,
    pub p_upper: f64,
    /// The band on the difference of means: `band·|mean_b|/100`.
    pub bound: f64,
    /// The 90% CI of the difference and of the % change.
    pub diff_ci90: (f64, f64),
    pub pct_ci90: (f64, f64),
}

/// TOST of `change` (from [`super::welch()`] of `base`, `treat`) against `±band_pct` of the
/// baseline mean; `None` when there is no test (zero variance on both sides, a zero baseline
/// mean or a band that is not positive).
pub fn tost(base: &Summary, change: &Change, band_pct: f64) -> Option<Tost> {
    if change.zero_variance || base.mean == 0.0 || band_pct.is_nan() || band_pct <= 0.0 {
        return None;
    }
    let bound = band_pct * base.mean.abs() / 100.0;
    let (d, se, df) = (change.diff, change.se, change.df);
    // 1 - T(x) as T(-x): small p-values keep their digits.
    let p_lower = t_cdf(-(d + bound) / se, df);
    let p_upper = t_cdf((d - bound) / se, df);
    let half = t_ppf(1.0 - ALPHA, df) * se;
    let diff_ci90 = (d - half, d + half);
    let pct = |x: f64| 100.0 * x / base.mean;
    Some(Tost {
        p_value: p_lower.max(p_upper),
        p_lower,
        p_upper,
        bound,
        diff_ci90,
        pct_ci90: (pct(diff_ci90.0), pct(diff_ci90.1)),
    })
}
