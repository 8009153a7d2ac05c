//! A treatment cell against its baseline as a ratio: the change is estimated on the log
//! scale, `Δ = ln(level_t / level_b)`, and shown as `100·(exp(Δ) - 1)` %, so that neither it
//! nor any interval of it can pass -100%.
//!
//! - Welch ([`delta()`]): `Δ = ln(mean_t) - ln(mean_b)`, with the delta method for the standard
//!   error of a log mean, `se(ln mean) ≈ s / (√n · mean)`: `se = √(s_t²/(n_t·mean_t²) +
//!   s_b²/(n_b·mean_b²))`, and the Welch–Satterthwaite degrees of freedom of these two
//!   variance components. This is Welch's test of the runs each divided by its cell's mean.
//!   The point change is the ratio of the arithmetic means.
//! - Blocked models ([`compare()`]): least squares of `ln(y)` on the cell and the block
//!   factors (the round, the database host; [`super::linear`]), `Δ` the cell's coefficient,
//!   with its standard error and `n - rank` degrees of freedom. The point change is then the
//!   ratio of the cells' geometric means within blocks.
//!
//! Both estimate the log of the ratio of the cell's level to the baseline's; for the CVs of
//! benchmark runs (a few %) geometric and arithmetic means differ by about `CV²/2`. The t-test
//! is `t = Δ/se`, two-sided, and the CIs are `Δ ± t(1 - α/2, df)·se` mapped to %.

use super::linear;
use super::welch::{Summary, summarize, t_quantile, t_two_sided_p};

/// The model a comparison was estimated with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Welch's unpaired comparison of the two cells' runs (delta method on the log scale).
    Welch,
    /// `ln y ~ cell + round`: each round (one run of every cell, close in time) is a block.
    Rounds,
    /// `ln y ~ cell + host`: each database host is a block.
    Hosts,
    /// `ln y ~ cell + round + host`.
    RoundsAndHosts,
}

impl Model {
    /// The name the results show: welch, rounds, hosts, rounds+hosts.
    pub fn as_str(self) -> &'static str {
        match self {
            Model::Welch => "welch",
            Model::Rounds => "rounds",
            Model::Hosts => "hosts",
            Model::RoundsAndHosts => "rounds+hosts",
        }
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a comparison's standard error would shrink with more rounds, at the observed
/// variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// Welch: each side's squared CV (`s²/mean²`) and run count; a round adds a run to each.
    Welch { vb: f64, vt: f64, nb: f64, nt: f64 },
    /// A blocked model: `se` scales as `√(rounds / (rounds + k))` and each added round adds
    /// `df_per_round` residual degrees of freedom.
    Blocked { rounds: f64, df_per_round: f64 },
}

/// A treatment cell against its baseline on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    pub model: Model,
    /// `Δ`, the log of the ratio of the cell's level to the baseline's; NaN when a mean is not
    /// positive (only with zero variance on both sides).
    pub log_ratio: f64,
    /// Standard error of `Δ`.
    pub se: f64,
    /// Degrees of freedom: Welch–Satterthwaite, or the model's residual df.
    pub df: f64,
    pub t: f64,
    /// Two-sided p-value of `Δ = 0`; NaN with zero variance.
    pub p_value: f64,
    /// 95% CI of `Δ`.
    pub log_ci95: (f64, f64),
    /// No variance to test against: there is only the point change.
    pub zero_variance: bool,
    /// With zero variance: the two cells' means are equal.
    pub identical: bool,
    pub growth: Growth,
}

/// `100·(exp(Δ) - 1)`: a log ratio as a % change.
pub fn pct_of_log(log_ratio: f64) -> f64 {
    100.0 * log_ratio.exp_m1()
}

impl Ratio {
    /// The % change; `None` when `Δ` is not defined.
    pub fn pct(&self) -> Option<f64> {
        self.log_ratio
            .is_finite()
            .then(|| pct_of_log(self.log_ratio))
    }

    /// The 95% CI of the % change.
    pub fn pct_ci95(&self) -> Option<(f64, f64)> {
        self.pct()?;
        Some((pct_of_log(self.log_ci95.0), pct_of_log(self.log_ci95.1)))
    }

    /// The 95% CI of `Δ` excludes 0.
    pub fn excludes_zero(&self) -> bool {
        self.log_ci95.0 > 0.0 || self.log_ci95.1 < 0.0
    }
}

fn tested(model: Model, log_ratio: f64, se: f64, df: f64, growth: Growth) -> Ratio {
    let t = log_ratio / se;
    let half = t_quantile(df) * se;
    Ratio {
        model,
        log_ratio,
        se,
        df,
        t,
        p_value: t_two_sided_p(t, df),
        log_ci95: (log_ratio - half, log_ratio + half),
        zero_variance: false,
        identical: false,
        growth,
    }
}

/// Welch's comparison of `treat` against `base` on the log scale, with the delta method;
/// `None` when either side has fewer than 2 runs, or, with variance, a mean that is not
/// positive.
///
/// With zero variance on both sides there is no test: `zero_variance` is set, the p-value is
/// NaN, the CI is the point and df = n_b + n_t - 2.
pub fn delta(base: &Summary, treat: &Summary) -> Option<Ratio> {
    if base.n < 2 || treat.n < 2 {
        return None;
    }
    let (nb, nt) = (base.n as f64, treat.n as f64);
    if base.stddev == 0.0 && treat.stddev == 0.0 {
        let positive = base.mean > 0.0 && treat.mean > 0.0;
        let log_ratio = if positive {
            (treat.mean / base.mean).ln()
        } else {
            f64::NAN
        };
        return Some(Ratio {
            model: Model::Welch,
            log_ratio,
            se: 0.0,
            df: nb + nt - 2.0,
            t: f64::NAN,
            p_value: f64::NAN,
            log_ci95: (log_ratio, log_ratio),
            zero_variance: true,
            identical: base.mean == treat.mean,
            growth: Growth::Welch {
                vb: 0.0,
                vt: 0.0,
                nb,
                nt,
            },
        });
    }
    if base.mean <= 0.0 || treat.mean <= 0.0 {
        return None;
    }
    let vb = (base.stddev / base.mean).powi(2);
    let vt = (treat.stddev / treat.mean).powi(2);
    let (se, df) = welch_se_df(vb, vt, nb, nt);
    let log_ratio = (treat.mean / base.mean).ln();
    Some(tested(
        Model::Welch,
        log_ratio,
        se,
        df,
        Growth::Welch { vb, vt, nb, nt },
    ))
}

/// Welch's standard error and Welch–Satterthwaite df from each side's per-run variance and
/// run count.
pub(super) fn welch_se_df(vb: f64, vt: f64, nb: f64, nt: f64) -> (f64, f64) {
    let (ub, ut) = (vb / nb, vt / nt);
    let df = (ub + ut).powi(2) / (ub.powi(2) / (nb - 1.0) + ut.powi(2) / (nt - 1.0));
    ((ub + ut).sqrt(), df)
}

/// One run in a comparison: its value, its round (`ExportRun::repetition`) and its database
/// host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Run<'a> {
    pub value: f64,
    pub round: u32,
    pub host: &'a str,
}

/// The comparison of `treat` against `base` with the model the design allows: the round as
/// a block when `rounds_are_blocks` (the job's run order puts one run of every cell in each
/// round) and at least 2 rounds hold both cells, the database host when the runs come from 2
/// hosts or more; Welch ([`delta()`]) when neither applies, when the blocked design cannot
/// separate the cell from the blocks or leaves no residual degree of freedom, or when a value
/// is not positive.
pub fn compare(base: &[Run<'_>], treat: &[Run<'_>], rounds_are_blocks: bool) -> Option<Ratio> {
    let model = model_for(base, treat, rounds_are_blocks);
    if model != Model::Welch
        && let Some(r) = fit_log(model, base, treat)
    {
        return Some(r);
    }
    let values = |runs: &[Run<'_>]| -> Vec<f64> { runs.iter().map(|r| r.value).collect() };
    delta(&summarize(&values(base))?, &summarize(&values(treat))?)
}

/// Rounds that hold runs of both cells.
fn paired_rounds(base: &[Run<'_>], treat: &[Run<'_>]) -> Vec<u32> {
    let mut rounds: Vec<u32> = base
        .iter()
        .map(|r| r.round)
        .filter(|round| treat.iter().any(|t| t.round == *round))
        .collect();
    rounds.sort_unstable();
    rounds.dedup();
    rounds
}

/// The model the design allows (before fitting it).
pub fn model_for(base: &[Run<'_>], treat: &[Run<'_>], rounds_are_blocks: bool) -> Model {
    let rounds = rounds_are_blocks && paired_rounds(base, treat).len() >= 2;
    let mut hosts: Vec<&str> = base.iter().chain(treat).map(|r| r.host).collect();
    hosts.sort_unstable();
    hosts.dedup();
    match (rounds, hosts.len() >= 2) {
        (true, true) => Model::RoundsAndHosts,
        (true, false) => Model::Rounds,
        (false, true) => Model::Hosts,
        (false, false) => Model::Welch,
    }
}

/// Level ids of a factor: the position of each run's level among the distinct levels.
fn levels<T: Ord + Copy>(keys: &[T]) -> Vec<usize> {
    let mut distinct = keys.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    keys.iter()
        .map(|k| distinct.binary_search(k).unwrap_or(0))
        .collect()
}

/// A blocked model fitted on `ln y`; `None` when it cannot be (see [`compare()`]).
fn fit_log(model: Model, base: &[Run<'_>], treat: &[Run<'_>]) -> Option<Ratio> {
    if base.len() < 2 || treat.len() < 2 {
        return None;
    }
    let runs: Vec<(&Run<'_>, bool)> = base
        .iter()
        .map(|r| (r, false))
        .chain(treat.iter().map(|r| (r, true)))
        .collect();
    if runs
        .iter()
        .any(|(r, _)| !(r.value > 0.0 && r.value.is_finite()))
    {
        return None;
    }
    let y: Vec<f64> = runs.iter().map(|(r, _)| r.value.ln()).collect();
    let treated: Vec<bool> = runs.iter().map(|(_, t)| *t).collect();
    let rounds: Vec<u32> = runs.iter().map(|(r, _)| r.round).collect();
    let hosts: Vec<&str> = runs.iter().map(|(r, _)| r.host).collect();
    let factors = match model {
        Model::Welch => return None,
        Model::Rounds => vec![levels(&rounds)],
        Model::Hosts => vec![levels(&hosts)],
        Model::RoundsAndHosts => vec![levels(&rounds), levels(&hosts)],
    };
    let fit = linear::cell_effect(&y, &treated, &factors)?;
    let growth = match model {
        Model::Hosts => Growth::Blocked {
            rounds: base.len().min(treat.len()) as f64,
            df_per_round: 2.0,
        },
        _ => Growth::Blocked {
            rounds: paired_rounds(base, treat).len() as f64,
            df_per_round: 1.0,
        },
    };
    if fit.se > 0.0 && fit.se.is_finite() {
        return Some(tested(model, fit.coef, fit.se, fit.df, growth));
    }
    Some(Ratio {
        model,
        log_ratio: fit.coef,
        se: 0.0,
        df: fit.df,
        t: f64::NAN,
        p_value: f64::NAN,
        log_ci95: (fit.coef, fit.coef),
        zero_variance: true,
        identical: fit.coef == 0.0,
        growth,
    })
}

#[cfg(test)]
mod tests;
