//! A job's comparisons under one selection of runs: each cell against its baseline for every
//! metric, the q-values across the family of comparisons, and the verdicts.
//!
//! The family is every comparison that can bear a verdict: each non-baseline cell with a
//! baseline and at least 2 runs on both sides, times every metric of the job that is not
//! descriptive (pgbench's columns and the workload kind's own metrics, except counts, shares,
//! sizes and per-transaction costs), leaving out comparisons where both sides have zero
//! variance (no test). The comparisons' p-values get Benjamini–Hochberg q-values across it,
//! and so, separately, do the TOST p-values of the same comparisons.
//!
//! Each comparison is a ratio on the log scale with the model its design allows
//! ([`stats::compare`]): the round is a block only within one job whose run order makes rounds
//! blocks. An inconclusive comparison gets the rounds it would need to show equivalence, up
//! to the job's maximum of repetitions (or [`stats::MAX_EXTRA_ROUNDS`]).

use blocklab_measure::job::CellStats;

use super::baseline::{NO_LIKE_CELL, Pair};
use super::cell::{Runs, host_results, own, summary, values};
use crate::stats::{self, Evidence, Metric, Ratio, Run, Summary, Tost, Verdict, fdr};

/// A cell's statistics of one metric, and the cell on each of its hosts.
pub(super) struct Judged {
    pub stats: CellStats,
    pub hosts: Vec<blocklab_measure::job::HostResult>,
}

/// How a side's comparisons are made.
#[derive(Debug, Clone, Copy)]
pub(super) struct Design {
    /// The equivalence band in %.
    pub band_pct: f64,
    /// Rounds are blocks: one job whose run order puts a run of every cell in each round.
    pub rounds_are_blocks: bool,
    /// The job's maximum of repetitions (0: none).
    pub max_repetitions: u32,
    /// The level the q-values are compared with: ALPHA, or a look's level under the
    /// sequential boundary (`until = "decided"`, [`stats::sequential`]).
    pub alpha: f64,
}

impl Design {
    /// The most rounds a comparison with `n` runs per side could still add.
    fn limit(&self, n: usize) -> u32 {
        if self.max_repetitions > 0 {
            self.max_repetitions
                .saturating_sub(u32::try_from(n).unwrap_or(u32::MAX))
        } else {
            stats::MAX_EXTRA_ROUNDS
        }
    }
}

/// One comparison's tests, kept until the family's q-values are known.
struct Tests {
    change: Ratio,
    /// The larger run count of the two sides.
    n: usize,
    /// The smaller one (the verdict's gate, [`stats::MIN_RUNS_TO_DECIDE`]).
    n_min: usize,
    tost: Option<Tost>,
    q: Option<f64>,
    tost_q: Option<f64>,
}

/// The statistics, `[metric][cell]`, of the treatment side's cells (`treat`, one [`Runs`] per
/// cell) against the baseline side's (`base`; `None` = the treatment side itself), made as
/// `design` says.
pub(super) fn judge(
    metrics: &[Metric],
    treat: &[Runs<'_>],
    base: Option<&[Runs<'_>]>,
    pairs: &[Pair],
    design: Design,
) -> Vec<Vec<Judged>> {
    let band_pct = design.band_pct;
    let mut out = Vec::with_capacity(metrics.len());
    let mut tests: Vec<Vec<Option<Tests>>> = Vec::with_capacity(metrics.len());
    for metric in metrics {
        let t_sum: Vec<Option<Summary>> = treat.iter().map(|r| summary(r, metric)).collect();
        let b_sum: Vec<Option<Summary>> = match base {
            Some(base) => base.iter().map(|r| summary(r, metric)).collect(),
            None => t_sum.clone(),
        };
        let t_hosts: Vec<Vec<Run<'_>>> = treat.iter().map(|r| values(r, metric)).collect();
        let b_hosts: Vec<Vec<Run<'_>>> = match base {
            Some(base) => base.iter().map(|r| values(r, metric)).collect(),
            None => t_hosts.clone(),
        };
        let mut row = Vec::with_capacity(treat.len());
        let mut row_tests = Vec::with_capacity(treat.len());
        for (c, pair) in pairs.iter().enumerate() {
            let mine = t_sum[c].as_ref();
            let mut s = own(mine);
            let mut test = None;
            let mut no_ratio = false;
            let against = match pair {
                Pair::Against { at, .. } => Some(b_hosts[*at].as_slice()),
                _ => None,
            };
            let hosts = host_results(&t_hosts[c], against);
            match pair {
                Pair::Baseline => {
                    s.verdict = Verdict::Baseline.to_string();
                    s.baseline_mean = mine.map(|m| m.mean);
                }
                Pair::NoBaseline => s.verdict = Verdict::InsufficientData.to_string(),
                Pair::NoLikeCell => s.verdict = NO_LIKE_CELL.to_string(),
                Pair::Against { at, .. } => {
                    let b = b_sum[*at].as_ref();
                    s.baseline_mean = b.map(|b| b.mean);
                    if let (Some(b), Some(t)) = (b, mine) {
                        s.pct_change_vs_baseline = stats::pct_change(t.mean, b.mean);
                    }
                    let change =
                        stats::compare(&b_hosts[*at], &t_hosts[c], design.rounds_are_blocks);
                    if let Some(change) = change {
                        // The change as the model estimates it: the ratio of the means for
                        // Welch, the within-block ratio for a blocked model.
                        if let Some(pct) = change.pct() {
                            s.pct_change_vs_baseline = Some(pct);
                        }
                        s.pct_change_ci95_low = change.pct_ci95().map(|p| p.0);
                        s.pct_change_ci95_high = change.pct_ci95().map(|p| p.1);
                        s.welch_df = Some(change.df);
                        s.zero_variance = change.zero_variance;
                        s.p_value = (!change.zero_variance).then_some(change.p_value);
                        s.model = change.model.to_string();
                        s.mde_pct = change.mde_pct();
                        let tost = stats::tost(&change, band_pct);
                        if let Some(t) = &tost {
                            s.tost_p_value = Some(t.p_value);
                            s.pct_change_ci90_low = Some(t.pct_ci90.0);
                            s.pct_change_ci90_high = Some(t.pct_ci90.1);
                        }
                        let n = b.zip(mine).map_or(0, |(b, t)| b.n.max(t.n));
                        let n_min = b.zip(mine).map_or(0, |(b, t)| b.n.min(t.n));
                        test = Some(Tests {
                            change,
                            n,
                            n_min,
                            tost,
                            q: None,
                            tost_q: None,
                        });
                    } else if b.zip(mine).is_some_and(|(b, t)| b.n >= 2 && t.n >= 2) {
                        // A mean that is not positive: the change is not a ratio.
                        no_ratio = true;
                    }
                }
            }
            if no_ratio {
                s.verdict = Verdict::NoVerdict.to_string();
            }
            row.push(Judged { stats: s, hosts });
            row_tests.push(test);
        }
        out.push(row);
        tests.push(row_tests);
    }
    q_values(metrics, &mut tests);
    for (mi, metric) in metrics.iter().enumerate() {
        for (c, pair) in pairs.iter().enumerate() {
            if !matches!(pair, Pair::Against { .. }) {
                continue;
            }
            let t = tests[mi][c].as_ref();
            let s = &mut out[mi][c].stats;
            if t.is_none() && s.verdict == Verdict::NoVerdict.as_str() {
                continue;
            }
            s.q_value = t.and_then(|t| t.q);
            s.tost_q_value = t.and_then(|t| t.tost_q);
            let evidence = Evidence {
                change: t.map(|t| &t.change),
                q: s.q_value,
                tost_q: s.tost_q_value,
            };
            let verdict = stats::verdict_at(metric, evidence, design.alpha);
            let verdict = t.map_or(verdict, |t| stats::gated(verdict, t.n_min));
            s.verdict = verdict.to_string();
            if let (Verdict::Inconclusive | Verdict::TooFewRuns, Some(t)) = (verdict, t) {
                match t.change.rounds_to_equivalence(band_pct, design.limit(t.n)) {
                    Some(k) => s.extra_rounds = Some(k),
                    None => s.extra_rounds_cannot = true,
                }
            }
        }
    }
    out
}

/// Fills the q-values of the family's comparisons (Welch's and TOST's, each across the
/// family).
fn q_values(metrics: &[Metric], tests: &mut [Vec<Option<Tests>>]) {
    let mut members: Vec<(usize, usize)> = Vec::new();
    for (mi, metric) in metrics.iter().enumerate() {
        if metric.is_descriptive() {
            continue;
        }
        for (c, t) in tests[mi].iter().enumerate() {
            if t.as_ref()
                .is_some_and(|t| !t.change.zero_variance && t.change.p_value.is_finite())
            {
                members.push((mi, c));
            }
        }
    }
    let get = |tests: &[Vec<Option<Tests>>], (mi, c): (usize, usize)| {
        tests[mi][c].as_ref().map_or((f64::NAN, f64::NAN), |t| {
            (t.change.p_value, t.tost.map_or(f64::NAN, |x| x.p_value))
        })
    };
    let p: Vec<f64> = members.iter().map(|&m| get(tests, m).0).collect();
    let tost_p: Vec<f64> = members.iter().map(|&m| get(tests, m).1).collect();
    let q = fdr::bh_q_values(&p);
    let tost_q = fdr::bh_q_values(&tost_p);
    for (k, &(mi, c)) in members.iter().enumerate() {
        if let Some(t) = tests[mi][c].as_mut() {
            t.q = q[k].is_finite().then_some(q[k]);
            t.tost_q = tost_q[k].is_finite().then_some(tost_q[k]);
        }
    }
}
