//! A job's comparisons under one selection of runs: each cell against its baseline for every
//! metric, the q-values across the family of comparisons, and the verdicts.
//!
//! The family is every comparison that can bear a verdict: each non-baseline cell with a
//! baseline and at least 2 runs on both sides, times every metric of the job that is not
//! descriptive (pgbench's columns and the workload kind's own metrics, except counts, shares,
//! sizes and per-transaction costs), leaving out comparisons where both sides have zero
//! variance (no test). Welch's p-values get Benjamini–Hochberg q-values across it, and so,
//! separately, do the TOST p-values of the same comparisons.

use blocklab_measure::job::CellStats;

use super::baseline::{NO_LIKE_CELL, Pair};
use super::cell::{Runs, by_host, host_results, own, summary};
use crate::stats::{self, Change, Evidence, Metric, Summary, Tost, Verdict, fdr};

/// A cell's statistics of one metric, and the cell on each of its hosts.
pub(super) struct Judged {
    pub stats: CellStats,
    pub hosts: Vec<blocklab_measure::job::HostResult>,
}

/// One comparison's tests, kept until the family's q-values are known.
struct Tests {
    change: Change,
    tost: Option<Tost>,
    q: Option<f64>,
    tost_q: Option<f64>,
}

/// The statistics, `[metric][cell]`, of the treatment side's cells (`treat`, one [`Runs`] per
/// cell) against the baseline side's (`base`; `None` = the treatment side itself), judged with
/// the equivalence band `band_pct`.
pub(super) fn judge(
    metrics: &[Metric],
    treat: &[Runs<'_>],
    base: Option<&[Runs<'_>]>,
    pairs: &[Pair],
    band_pct: f64,
) -> Vec<Vec<Judged>> {
    let mut out = Vec::with_capacity(metrics.len());
    let mut tests: Vec<Vec<Option<Tests>>> = Vec::with_capacity(metrics.len());
    for metric in metrics {
        let t_sum: Vec<Option<Summary>> = treat.iter().map(|r| summary(r, metric)).collect();
        let b_sum: Vec<Option<Summary>> = match base {
            Some(base) => base.iter().map(|r| summary(r, metric)).collect(),
            None => t_sum.clone(),
        };
        let t_hosts: Vec<Vec<(&str, f64)>> = treat.iter().map(|r| by_host(r, metric)).collect();
        let b_hosts: Vec<Vec<(&str, f64)>> = match base {
            Some(base) => base.iter().map(|r| by_host(r, metric)).collect(),
            None => t_hosts.clone(),
        };
        let mut row = Vec::with_capacity(treat.len());
        let mut row_tests = Vec::with_capacity(treat.len());
        for (c, pair) in pairs.iter().enumerate() {
            let mine = t_sum[c].as_ref();
            let mut s = own(mine);
            let mut test = None;
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
                    // Runs from several hosts: the host is a block (else Welch).
                    let change = stats::blocked(&b_hosts[*at], &t_hosts[c])
                        .or_else(|| b.zip(mine).and_then(|(b, t)| stats::welch(b, t)));
                    if let (Some(b), Some(change)) = (b, change) {
                        s.pct_change_ci95_low = change.pct_ci95.map(|p| p.0);
                        s.pct_change_ci95_high = change.pct_ci95.map(|p| p.1);
                        s.welch_df = Some(change.df);
                        s.zero_variance = change.zero_variance;
                        s.p_value = (!change.zero_variance).then_some(change.p_value);
                        let tost = stats::tost(b, &change, band_pct);
                        if let Some(t) = &tost {
                            s.tost_p_value = Some(t.p_value);
                            s.pct_change_ci90_low = Some(t.pct_ci90.0);
                            s.pct_change_ci90_high = Some(t.pct_ci90.1);
                        }
                        test = Some(Tests {
                            change,
                            tost,
                            q: None,
                            tost_q: None,
                        });
                    }
                }
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
            s.q_value = t.and_then(|t| t.q);
            s.tost_q_value = t.and_then(|t| t.tost_q);
            let evidence = Evidence {
                change: t.map(|t| &t.change),
                q: s.q_value,
                tost_q: s.tost_q_value,
            };
            s.verdict = stats::verdict(metric, evidence).to_string();
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
