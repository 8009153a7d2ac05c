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
//! - Verdict: "insufficient data" when either side has fewer than 2 runs; "no significant
//!   difference" when p ≥ 0.05 or the CI of the change spans 0; otherwise "faster" or "slower"
//!   in the metric's good direction (higher tps is faster, lower latency is faster).
//! - Suspect runs: see [`SUSPECT_RULE`] and [`select_runs`].

use statrs::distribution::{ContinuousCDF, StudentsT};

/// Significance level of the verdict; the intervals are `1 - ALPHA` (95%).
pub const ALPHA: f64 = 0.05;

/// The documented rule for suspect runs (shown by `blocklab results --help` and the README).
pub const SUSPECT_RULE: &str = "A run is suspect when the coordinator flagged it (a checkpoint \
in the measured window, a server restart, client CPU saturated, errors). Suspect runs are shown \
and counted, and excluded from a cell's statistics, unless excluding them would leave the cell \
with fewer than 2 runs: then all the cell's runs are used and the cell is marked \
(\"suspect runs included\").";

/// A per-run metric that can be summarised: a column of `results` (pgbench's measures, which
/// every run has) or a metric of the workload kind (`run_metrics`: NOTPM, seconds per query,
/// tuples per second, ...).
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    Tps,
    TpsInclConn,
    LatencyAvgMs,
    LatencyP50Ms,
    LatencyP90Ms,
    LatencyP99Ms,
    LatencyP999Ms,
    LatencyMaxMs,
    Workload {
        name: String,
        unit: String,
        higher_is_better: bool,
    },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("metric: unknown metric {name:?}; allowed: {allowed}")]
    UnknownMetric { name: String, allowed: String },
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Tps,
        Metric::TpsInclConn,
        Metric::LatencyAvgMs,
        Metric::LatencyP50Ms,
        Metric::LatencyP90Ms,
        Metric::LatencyP99Ms,
        Metric::LatencyP999Ms,
        Metric::LatencyMaxMs,
    ];

    /// The metric's name: its column in `results` / `results_v`, or its `run_metrics.name`.
    pub fn name(&self) -> &str {
        match self {
            Metric::Tps => "tps",
            Metric::TpsInclConn => "tps_incl_conn",
            Metric::LatencyAvgMs => "latency_avg_ms",
            Metric::LatencyP50Ms => "latency_p50_ms",
            Metric::LatencyP90Ms => "latency_p90_ms",
            Metric::LatencyP99Ms => "latency_p99_ms",
            Metric::LatencyP999Ms => "latency_p999_ms",
            Metric::LatencyMaxMs => "latency_max_ms",
            Metric::Workload { name, .. } => name,
        }
    }

    /// Throughput: higher is better; latency and durations: lower is better.
    pub fn higher_is_better(&self) -> bool {
        match self {
            Metric::Workload {
                higher_is_better, ..
            } => *higher_is_better,
            m => matches!(m, Metric::Tps | Metric::TpsInclConn),
        }
    }

    pub fn unit(&self) -> &str {
        match self {
            Metric::Workload { unit, .. } => unit,
            m if m.higher_is_better() => "tps",
            _ => "ms",
        }
    }

    /// Digits after the decimal point that suit the unit.
    pub fn decimals(&self) -> usize {
        match self.unit() {
            "s" => 4,
            "ms" => 3,
            "count" | "bytes" => 0,
            _ => 1,
        }
    }

    /// Comma-separated list of the pgbench metric names.
    pub fn allowed() -> String {
        Metric::ALL.map(|m| m.name().to_string()).join(", ")
    }

    /// Parses a pgbench metric name; the empty string means `tps`.
    pub fn parse(s: &str) -> Result<Metric, StatsError> {
        if s.is_empty() {
            return Ok(Metric::Tps);
        }
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| StatsError::UnknownMetric {
                name: s.to_string(),
                allowed: Metric::allowed(),
            })
    }

    /// A pgbench metric by name, else one of `known` (a job's workload metrics as (name,
    /// unit, higher is better)); the error lists both.
    pub fn resolve(s: &str, known: &[(String, String, bool)]) -> Result<Metric, StatsError> {
        if let Ok(m) = Metric::parse(s) {
            return Ok(m);
        }
        known
            .iter()
            .find(|(n, _, _)| n == s)
            .map(|(n, u, h)| Metric::Workload {
                name: n.clone(),
                unit: u.clone(),
                higher_is_better: *h,
            })
            .ok_or_else(|| {
                let mut allowed = Metric::allowed();
                for (n, _, _) in known {
                    allowed.push_str(", ");
                    allowed.push_str(n);
                }
                StatsError::UnknownMetric {
                    name: s.to_string(),
                    allowed,
                }
            })
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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

/// The `1 - ALPHA/2` quantile of Student's t with `df` degrees of freedom.
pub fn t_quantile(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(1.0 - ALPHA / 2.0))
        .unwrap_or(f64::NAN)
}

/// Two-sided p-value of a t statistic with `df` degrees of freedom.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df)
        .map(|d| (2.0 * (1.0 - d.cdf(t.abs()))).clamp(0.0, 1.0))
        .unwrap_or(f64::NAN)
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
    /// 95% CI of the difference of means.
    pub diff_ci95: (f64, f64),
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    pub t: f64,
    /// Two-sided p-value of Welch's t-test.
    pub p_value: f64,
    /// 100·diff / mean_b and its CI (the CI of the difference over mean_b); `None` when the
    /// baseline mean is zero.
    pub pct: Option<f64>,
    pub pct_ci95: Option<(f64, f64)>,
}

/// Welch's comparison of `treat` against `base`; `None` when either has fewer than 2 runs.
///
/// When both samples have zero variance the test is degenerate: the p-value is 1 if the
/// means are equal and 0 otherwise, the CI is the point difference, and df = n_b + n_t - 2.
pub fn welch(base: &Summary, treat: &Summary) -> Option<Change> {
    if base.n < 2 || treat.n < 2 {
        return None;
    }
    let (nb, nt) = (base.n as f64, treat.n as f64);
    let vb = base.stddev.powi(2) / nb;
    let vt = treat.stddev.powi(2) / nt;
    let se = (vb + vt).sqrt();
    let diff = treat.mean - base.mean;
    let (df, t, p_value, half) = if se > 0.0 {
        let df = (vb + vt).powi(2) / (vb.powi(2) / (nb - 1.0) + vt.powi(2) / (nt - 1.0));
        let t = diff / se;
        (df, t, t_two_sided_p(t, df), t_quantile(df) * se)
    } else {
        let p = if diff == 0.0 { 1.0 } else { 0.0 };
        let t = if diff == 0.0 {
            0.0
        } else {
            diff.signum() * f64::INFINITY
        };
        (nb + nt - 2.0, t, p, 0.0)
    };
    let diff_ci95 = (diff - half, diff + half);
    let scale = |x: f64| 100.0 * x / base.mean;
    let pct_ok = base.mean != 0.0;
    Some(Change {
        diff,
        diff_ci95,
        df,
        t,
        p_value,
        pct: pct_ok.then(|| scale(diff)),
        pct_ci95: pct_ok.then(|| (scale(diff_ci95.0), scale(diff_ci95.1))),
    })
}

/// What a comparison says, in plain words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Baseline,
    Faster,
    Slower,
    NoSignificantDifference,
    InsufficientData,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::InsufficientData => "insufficient data",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The verdict for a treatment cell; `change` is `None` when either side had < 2 runs.
pub fn verdict(metric: &Metric, change: Option<&Change>) -> Verdict {
    let Some(c) = change else {
        return Verdict::InsufficientData;
    };
    let spans_zero = c.diff_ci95.0 <= 0.0 && c.diff_ci95.1 >= 0.0;
    if c.p_value.is_nan() || c.p_value >= ALPHA || spans_zero {
        return Verdict::NoSignificantDifference;
    }
    if (c.diff > 0.0) == metric.higher_is_better() {
        Verdict::Faster
    } else {
        Verdict::Slower
    }
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

/// Applies [`SUSPECT_RULE`] to a cell's measured runs, given as (value, is_suspect).
pub fn select_runs<T>(runs: impl IntoIterator<Item = (T, bool)>) -> Selection<T> {
    let runs: Vec<(T, bool)> = runs.into_iter().collect();
    let suspect = runs.iter().filter(|(_, s)| *s).count();
    let clean = runs.len() - suspect;
    if suspect == 0 || clean >= 2 {
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
            suspect_included: true,
        }
    }
}

#[cfg(test)]
mod tests;
