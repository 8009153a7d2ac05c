//! Equivalence: two one-sided tests (TOST) of the change on the log scale against the band
//! `±band` % of the baseline, `(L, U) = (ln(1 - band/100), ln(1 + band/100))`: the band is
//! symmetric in % of the baseline, not in log units.
//!
//! With the comparison's `Δ`, `se` and `df` ([`super::Ratio`]): `p_lower = 1 - T_df((Δ -
//! L)/se)` tests H0 `Δ ≤ L`, `p_upper = T_df((Δ - U)/se)` tests H0 `Δ ≥ U`, and the TOST
//! p-value is the larger of the two. It is below `ALPHA` exactly when the `1 - 2·ALPHA` (90%)
//! CI, `Δ ± t(0.95, df)·se`, lies inside `(L, U)`, that is when the 90% CI of the % change lies
//! inside `(-band, +band)`.

use super::power::log_band;
use super::ratio::{Ratio, pct_of_log};
use super::welch::{ALPHA, t_cdf, t_ppf};

/// The equivalence test of a comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tost {
    /// max(p_lower, p_upper).
    pub p_value: f64,
    pub p_lower: f64,
    pub p_upper: f64,
    /// The band on the log scale, `(L, U)`.
    pub bounds: (f64, f64),
    /// The 90% CI of `Δ` and of the % change.
    pub log_ci90: (f64, f64),
    pub pct_ci90: (f64, f64),
}

/// TOST of `ratio` against `±band_pct` % of the baseline; `None` when there is no test (zero
/// variance, no defined change, or a band that is not positive).
pub fn tost(ratio: &Ratio, band_pct: f64) -> Option<Tost> {
    if ratio.zero_variance || !ratio.log_ratio.is_finite() || band_pct.is_nan() || band_pct <= 0.0 {
        return None;
    }
    let bounds = log_band(band_pct);
    let (d, se, df) = (ratio.log_ratio, ratio.se, ratio.df);
    // 1 - T(x) as T(-x): small p-values keep their digits.
    let p_lower = if bounds.0.is_finite() {
        t_cdf(-(d - bounds.0) / se, df)
    } else {
        0.0
    };
    let p_upper = t_cdf((d - bounds.1) / se, df);
    let half = t_ppf(1.0 - ALPHA, df) * se;
    let log_ci90 = (d - half, d + half);
    Some(Tost {
        p_value: p_lower.max(p_upper),
        p_lower,
        p_upper,
        bounds,
        log_ci90,
        pct_ci90: (pct_of_log(log_ci90.0), pct_of_log(log_ci90.1)),
    })
}
