//! What earlier jobs like a planned one say about it, for `budget = "10m"`: the fixed cost of
//! a run besides its warm-up and window, the noise of a run at another window length, and the
//! window and rounds the budget affords best.
//!
//! A run's tps over a window of `w` seconds is the mean of `w` per-second rates. With the
//! per-second rates' coefficient of variation `c` and lag-1 autocorrelation `ρ` (an AR(1)
//! approximation), the variance of that mean is `c²·(1 + ρ)/((1 − ρ)·w)`: the within-run part.
//! Runs also differ by more than their own seconds explain (a fresh cluster, the OS, the
//! disk): the between-run part `τ² = max(0, CV² − within(w₀)²)`, where `CV` is the pooled
//! within-cell standard deviation of `ln tps` of the earlier runs at their window `w₀`. So
//! `CV(w)² = τ² + c²·(1 + ρ)/((1 − ρ)·w)`: a longer window lowers only the first part, and
//! costs rounds.
//!
//! For each candidate window the budget affords `R = ⌊budget / (cells · (fixed + warm-up +
//! w))⌋` rounds (at most the maximum), and the change's 95% CI within rounds has the
//! half-width `t(0.975, (cells − 1)(R − 1)) · CV(w) · √(2/R)`; the window with the narrowest
//! is the choice.

use blocklab_measure::job::JobExport;
use blocklab_spec::Spec;

use crate::stats::{self, pct_of_log};

/// The windows a plan considers, in seconds.
const WINDOWS: [u64; 12] = [5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600];

/// The most earlier jobs a plan reads, out of the most recent done ones it looks at.
pub const MAX_JOBS: usize = 5;
pub const LOOK_BACK: usize = 30;

/// What earlier runs like the planned job's measured.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub jobs: usize,
    pub runs: usize,
    /// The median time of a run besides its warm-up and window, in seconds.
    pub fixed_secs: f64,
    /// The median window of those runs, in seconds.
    pub window_secs: f64,
    /// Pooled within-cell standard deviation of `ln tps` at that window.
    pub run_cv: f64,
    /// Coefficient of variation of the per-second rates, and their lag-1 autocorrelation
    /// (clamped to 0 ..= 0.95), averaged over the runs with samples.
    pub second_cv: f64,
    pub rho: f64,
}

impl History {
    /// The within-run variance of a window of `w` seconds (squared CV).
    fn within(&self, w: f64) -> f64 {
        self.second_cv.powi(2) * (1.0 + self.rho) / ((1.0 - self.rho) * w.max(1.0))
    }

    /// The expected CV of a run's tps at a window of `w` seconds.
    pub fn cv_at(&self, w: f64) -> f64 {
        let between = (self.run_cv.powi(2) - self.within(self.window_secs)).max(0.0);
        (between + self.within(w)).sqrt()
    }
}

/// Whether an earlier job (its spec text) ran the same load as `spec`: the same workload
/// kind, builtin and scale (its stored spec parsed without its files; one that needs them is
/// not like).
pub fn is_like(spec: &Spec, spec_toml: &str) -> bool {
    let Ok(theirs) = Spec::parse(spec_toml) else {
        return false;
    };
    let (a, b) = (&spec.workload, &theirs.workload);
    a.kind == b.kind && a.builtin == b.builtin && a.scale == b.scale
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

/// The per-second rates' squared CV and lag-1 autocorrelation of one run.
fn second_stats(rates: &[f64]) -> Option<(f64, f64)> {
    if rates.len() < 4 {
        return None;
    }
    let n = rates.len() as f64;
    let mean = rates.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let lag: f64 = rates
        .windows(2)
        .map(|w| (w[0] - mean) * (w[1] - mean))
        .sum::<f64>()
        / (n - 1.0);
    let rho = if var > 0.0 { lag / var } else { 0.0 };
    Some((var / mean.powi(2), rho.clamp(0.0, 0.95)))
}

/// What the runs of `earlier` (jobs like `spec`'s, see [`is_like`]) whose clients `spec`
/// also runs measured; `None` without 2 done runs in one cell.
pub fn history(spec: &Spec, earlier: &[JobExport]) -> Option<History> {
    let (mut fixed, mut windows, mut seconds) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ss, mut df, mut runs, mut jobs) = (0.0, 0.0, 0, 0);
    for e in earlier.iter().take(MAX_JOBS) {
        let Ok(theirs) = Spec::parse(&e.spec_toml) else {
            continue;
        };
        let window = theirs.workload.duration.as_secs_f64();
        let warmup = theirs.workload.warmup.as_secs_f64();
        let mut used = false;
        for cell in e.cells.iter().filter(|c| spec.clients.contains(&c.clients)) {
            let done: Vec<_> = e
                .runs
                .iter()
                .filter(|r| r.cell_index == cell.cell_index && r.state == "done")
                .filter(|r| r.result.as_ref().is_some_and(|m| m.tps > 0.0))
                .collect();
            for r in &done {
                if let Some(s) = crate::analysis::budget::run_seconds(&r.started_at, &r.finished_at)
                {
                    fixed.push((s - window - warmup).max(0.0));
                }
                let rates: Vec<f64> = r.samples.iter().map(|s| s.transactions as f64).collect();
                seconds.extend(second_stats(&rates));
            }
            let logs: Vec<f64> = done
                .iter()
                .filter_map(|r| r.result.as_ref().map(|m| m.tps.ln()))
                .collect();
            if logs.len() >= 2 {
                let n = logs.len() as f64;
                let mean = logs.iter().sum::<f64>() / n;
                ss += logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>();
                df += n - 1.0;
                runs += logs.len();
                windows.push(window);
                used = true;
            }
        }
        jobs += usize::from(used);
    }
    if df < 1.0 {
        return None;
    }
    let (second_cv, rho) = if seconds.is_empty() {
        (0.0, 0.0)
    } else {
        let k = seconds.len() as f64;
        (
            (seconds.iter().map(|s| s.0).sum::<f64>() / k).sqrt(),
            seconds.iter().map(|s| s.1).sum::<f64>() / k,
        )
    };
    Some(History {
        jobs,
        runs,
        fixed_secs: median(fixed).unwrap_or(0.0),
        window_secs: median(windows)?,
        run_cv: (ss / df).sqrt(),
        second_cv,
        rho,
    })
}

/// One candidate window under a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub window_secs: u64,
    pub rounds: u32,
    /// The expected CV of a run at this window (a fraction).
    pub cv: f64,
    /// The expected half-width of the change's 95% CI within rounds, in %.
    pub half_width_pct: f64,
}

/// Every window that affords at least `min` rounds (and 2) of `cells` cells within
/// `budget_secs`, the narrowest expected half-width first.
pub fn choices(
    h: &History,
    cells: u32,
    warmup_secs: f64,
    (min, max): (u32, u32),
    budget_secs: f64,
) -> Vec<Choice> {
    let mut out: Vec<Choice> = WINDOWS
        .iter()
        .filter_map(|&w| {
            let run = h.fixed_secs + warmup_secs + w as f64;
            let fit = (budget_secs / (run * f64::from(cells.max(1)))).floor();
            let rounds = if fit >= f64::from(max) {
                max
            } else {
                fit as u32
            };
            if rounds < min.max(2) || cells < 2 {
                return None;
            }
            let cv = h.cv_at(w as f64);
            let df = f64::from((cells - 1) * (rounds - 1));
            let half = stats::t_ppf(0.975, df) * cv * (2.0 / f64::from(rounds)).sqrt();
            Some(Choice {
                window_secs: w,
                rounds,
                cv,
                half_width_pct: pct_of_log(half),
            })
        })
        .collect();
    out.sort_by(|a, b| a.half_width_pct.total_cmp(&b.half_width_pct));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::Sample;
    use blocklab_measure::job::{ExportCell, ExportRun, RunMetrics};

    const SPEC: &str = "name = \"x\"\n[source]\ntarball = \"/x.tar.bz2\"\n[matrix]\nblock_size_kb = [8, 16]\nclients = [4]\n[workload]\nbuiltin = \"tpcb-like\"\nscale = 2\nduration = \"10s\"\nwarmup = \"2s\"\n";

    fn run(cell: u32, rep: u32, tps: f64, rates: &[u64]) -> ExportRun {
        ExportRun {
            cell_index: cell,
            repetition: rep,
            state: "done".into(),
            // 15 s a run: 3 s besides the 2 s warm-up and the 10 s window.
            started_at: format!("2026-12-06T01:00:{:02}.000Z", 15 * (2 * rep + cell)),
            finished_at: format!("2026-12-06T01:00:{:02}.000Z", 15 * (2 * rep + cell) + 15),
            result: Some(RunMetrics {
                tps,
                ..Default::default()
            }),
            samples: rates
                .iter()
                .enumerate()
                .map(|(i, &t)| Sample {
                    second: i as u32,
                    transactions: t,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn earlier() -> JobExport {
        let cell = |i: u32, bs: u32| ExportCell {
            cell_index: i,
            block_size_kb: bs,
            clients: 4,
            ..Default::default()
        };
        let rates = [100, 104, 98, 102, 110, 96];
        JobExport {
            spec_toml: SPEC.into(),
            cells: vec![cell(0, 8), cell(1, 16)],
            runs: vec![
                run(0, 0, 1000.0, &rates),
                run(1, 0, 990.0, &rates),
                run(0, 1, 1020.0, &rates),
                run(1, 1, 1000.0, &rates),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn the_history_of_like_jobs_matches_numpy() {
        let spec = Spec::parse(SPEC).expect("spec");
        let e = earlier();
        assert!(is_like(&spec, &e.spec_toml));
        let other = Spec::parse(&SPEC.replace("scale = 2", "scale = 3")).expect("spec");
        assert!(!is_like(&other, &e.spec_toml));
        let h = history(&spec, &[e]).expect("history");
        assert_eq!((h.jobs, h.runs), (1, 4));
        assert!((h.fixed_secs - 3.0).abs() < 1e-9, "{h:?}");
        assert!((h.window_secs - 10.0).abs() < 1e-9, "{h:?}");
        // numpy: sqrt((var(log([1000, 1020]), ddof=1) + var(log([990, 1000]), ddof=1)) / 2)
        assert!((h.run_cv - 0.011_103_527_576_851_13).abs() < 1e-12, "{h:?}");
        // numpy: x = [100,104,98,102,110,96]; std(x, ddof=1)/mean(x), and the lag-1
        // autocovariance over n-1 divided by the variance, clamped at 0.
        assert!(
            (h.second_cv - 0.048_851_358_772_955_21).abs() < 1e-12,
            "{h:?}"
        );
        assert_eq!(h.rho, 0.0);
        // No run of the planned clients: no history.
        let eight = Spec::parse(&SPEC.replace("clients = [4]", "clients = [8]")).expect("spec");
        assert_eq!(history(&eight, &[earlier()]), None);
    }

    #[test]
    fn the_budget_buys_the_window_with_the_narrowest_interval() {
        // Quiet seconds, noisy runs: a longer window buys little, rounds buy more.
        let h = History {
            jobs: 1,
            runs: 6,
            fixed_secs: 3.0,
            window_secs: 10.0,
            run_cv: 0.015,
            second_cv: 0.02,
            rho: 0.2,
        };
        assert!((h.cv_at(10.0) - 0.015).abs() < 1e-12);
        assert!(h.cv_at(60.0) < h.cv_at(10.0) && h.cv_at(60.0) > 0.012);
        let c = choices(&h, 2, 2.0, (3, 20), 180.0);
        let best = &c[0];
        // 5 s windows: 10 s a run, 9 rounds in 180 s; 10 s: 15 s a run, 6 rounds.
        assert_eq!((best.window_secs, best.rounds), (5, 9), "{c:?}");
        assert!(
            c.windows(2)
                .all(|w| w[0].half_width_pct <= w[1].half_width_pct)
        );
        // Nothing affords 3 rounds of 2 cells in 20 s.
        assert!(choices(&h, 2, 2.0, (3, 20), 20.0).is_empty());
    }
}
