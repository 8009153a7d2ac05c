//! A cell's summary over its repetitions and Welch's comparison of two cells, with the
//! Student t distribution they use.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Significance level of the verdict; the intervals are `1 - ALPHA` (95%), the TOST interval
/// `1 - 2·ALPHA` (90%).
pub const ALPHA: f64 = 0.05;

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
