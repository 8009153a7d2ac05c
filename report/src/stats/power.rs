//! What a comparison could detect and what it would take: the minimum detectable change at
//! 80% power, and the rounds an inconclusive comparison would need for its 90% CI to fit in
//! the equivalence band.
//!
//! - MDE: `m = (t(1 - α/2, df) + t(POWER, df))·se` on the log scale, shown as
//!   `100·(exp(m) - 1)` %: the smallest increase a two-sided test at `α` would find with
//!   probability `POWER`, at the observed standard error and df.
//! - Rounds to equivalence: the fewest `k` more rounds (one more run of each cell each) for
//!   which `Δ ± t(1 - α, df_k)·se_k` lies inside the band `(ln(1 - b/100), ln(1 + b/100))`,
//!   with `Δ` and the per-run variance as observed: for Welch `se_k² = v_t/(n_t + k) +
//!   v_b/(n_b + k)` with its Welch–Satterthwaite df, for a blocked model `se_k = se·√(r/(r +
//!   k))` over its `r` rounds and `df_k = df + k·(df added per round)`. None when even `limit`
//!   rounds are not enough (always so when `Δ` is outside the band).

use super::ratio::{Growth, Ratio, pct_of_log, welch_se_df};
use super::welch::{ALPHA, t_ppf};

/// The power the minimum detectable change is computed at.
pub const POWER: f64 = 0.8;

/// The most rounds the projection considers when the job sets no maximum of repetitions.
pub const MAX_EXTRA_ROUNDS: u32 = 1000;

/// The equivalence band `±band_pct` % on the log scale: `(ln(1 - b/100), ln(1 + b/100))`
/// (the lower end is -∞ for a band of 100% or more).
pub fn log_band(band_pct: f64) -> (f64, f64) {
    let low = if band_pct >= 100.0 {
        f64::NEG_INFINITY
    } else {
        (-band_pct / 100.0).ln_1p()
    };
    (low, (band_pct / 100.0).ln_1p())
}

impl Ratio {
    /// The minimum detectable change in % at [`POWER`] and `ALPHA` (two-sided); `None` with
    /// zero variance.
    pub fn mde_pct(&self) -> Option<f64> {
        if self.zero_variance || !self.se.is_finite() || self.se <= 0.0 {
            return None;
        }
        let m = (t_ppf(1.0 - ALPHA / 2.0, self.df) + t_ppf(POWER, self.df)) * self.se;
        Some(pct_of_log(m))
    }

    /// The standard error and df after `k` more rounds, at the observed variance.
    fn projected(&self, k: u32) -> (f64, f64) {
        let k = f64::from(k);
        match self.growth {
            Growth::Welch { vb, vt, nb, nt } => welch_se_df(vb, vt, nb + k, nt + k),
            Growth::Blocked {
                rounds,
                df_per_round,
            } => (
                self.se * (rounds / (rounds + k)).sqrt(),
                self.df + df_per_round * k,
            ),
        }
    }

    /// The 90% CI after `k` more rounds lies inside the band.
    fn fits(&self, k: u32, band: (f64, f64)) -> bool {
        let (se, df) = self.projected(k);
        let half = t_ppf(1.0 - ALPHA, df) * se;
        self.log_ratio - half > band.0 && self.log_ratio + half < band.1
    }

    /// The fewest more rounds (0 ..= `limit`) after which the 90% CI of the change would fit
    /// in `±band_pct` %; `None` when `limit` are not enough, or with zero variance.
    pub fn rounds_to_equivalence(&self, band_pct: f64, limit: u32) -> Option<u32> {
        if self.zero_variance || !self.log_ratio.is_finite() || band_pct.is_nan() || band_pct <= 0.0
        {
            return None;
        }
        let band = log_band(band_pct);
        if !self.fits(limit, band) {
            return None;
        }
        // The half-width shrinks as k grows: the first k that fits, by bisection.
        let (mut lo, mut hi) = (0u32, limit);
        if self.fits(0, band) {
            return Some(0);
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.fits(mid, band) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi)
    }
}

/// The minimum detectable change in % of a planned job, before any run: `cells` cells
/// measured in `rounds` complete rounds, each round a block (`ln y ~ cell + round`, residual
/// df `(cells − 1)(rounds − 1)`), a per-run CV of `cv_pct` % (the residual standard deviation
/// on the log scale), each comparison tested two-sided at `alpha`: `(t(1 − α/2, df) +
/// t(POWER, df))·cv·√(2/rounds)`. `None` with fewer than 2 cells or 2 rounds.
pub fn planned_mde_pct(cv_pct: f64, rounds: u32, cells: u32, alpha: f64) -> Option<f64> {
    let valid = cv_pct.is_finite() && cv_pct > 0.0 && alpha > 0.0 && alpha < 1.0;
    if rounds < 2 || cells < 2 || !valid {
        return None;
    }
    let df = f64::from((cells - 1) * (rounds - 1));
    let se = cv_pct / 100.0 * (2.0 / f64::from(rounds)).sqrt();
    let m = (t_ppf(1.0 - alpha / 2.0, df) + t_ppf(POWER, df)) * se;
    Some(pct_of_log(m))
}
