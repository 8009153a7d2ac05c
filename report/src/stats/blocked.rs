//! A comparison with the database host as a block: when a job ran on several identical hosts
//! (`placement.db_hosts`), a cell's change against its baseline is estimated within hosts.
//!
//! The model is the additive linear model `y = μ + cell + host + ε` over the runs of the two
//! cells, fitted by least squares: the change is the cell coefficient, its standard error
//! `√(s²·(XᵀX)⁻¹)` with `s² = RSS/(n - p)`, and the t-test and CI use `n - p` degrees of
//! freedom (p = 2 + hosts - 1). With every host running both cells equally often the change
//! is the mean of the per-host differences; host-to-host differences do not enter its error.
//! This is `statsmodels.formula.api.ols("y ~ C(cell) + C(host)")` and its `bse`,
//! `df_resid`, `pvalues` and `conf_int()` for the cell term. The % change is over the
//! baseline's mean, as in [`super::welch()`].

use super::welch::{Change, t_quantile, t_two_sided_p};

/// The change of `treat` against `base`, each run given as (host, value), with the host as a
/// block; `None` when the runs come from fewer than 2 hosts, the model has no degree of
/// freedom left, or the design does not separate the cell from the hosts.
pub fn blocked(base: &[(&str, f64)], treat: &[(&str, f64)]) -> Option<Change> {
    let mut hosts: Vec<&str> = base.iter().chain(treat).map(|(h, _)| *h).collect();
    hosts.sort_unstable();
    hosts.dedup();
    if hosts.len() < 2 || base.len() < 2 || treat.len() < 2 {
        return None;
    }
    let p = hosts.len() + 1;
    let row = |host: &str, treated: bool| -> Vec<f64> {
        let mut x = vec![0.0; p];
        x[0] = 1.0;
        x[1] = if treated { 1.0 } else { 0.0 };
        if let Some(i) = hosts.iter().position(|h| *h == host).filter(|&i| i > 0) {
            x[i + 1] = 1.0;
        }
        x
    };
    let obs: Vec<(Vec<f64>, f64)> = base
        .iter()
        .map(|(h, y)| (row(h, false), *y))
        .chain(treat.iter().map(|(h, y)| (row(h, true), *y)))
        .collect();
    let n = obs.len();
    if n <= p {
        return None;
    }
    let mut xtx = vec![vec![0.0; p]; p];
    let mut xty = vec![0.0; p];
    for (x, y) in &obs {
        for i in 0..p {
            xty[i] += x[i] * y;
            for j in 0..p {
                xtx[i][j] += x[i] * x[j];
            }
        }
    }
    let inv = invert(xtx)?;
    let beta: Vec<f64> = (0..p)
        .map(|i| (0..p).map(|j| inv[i][j] * xty[j]).sum())
        .collect();
    let rss: f64 = obs
        .iter()
        .map(|(x, y)| {
            let fit: f64 = x.iter().zip(&beta).map(|(a, b)| a * b).sum();
            (y - fit).powi(2)
        })
        .sum();
    let df = (n - p) as f64;
    let se = (rss / df * inv[1][1]).sqrt();
    let diff = beta[1];
    let zero_variance = se.is_nan() || se <= 0.0;
    let (t, p_value, half) = if zero_variance {
        (f64::NAN, f64::NAN, 0.0)
    } else {
        let t = diff / se;
        (t, t_two_sided_p(t, df), t_quantile(df) * se)
    };
    let base_mean = base.iter().map(|(_, y)| y).sum::<f64>() / base.len() as f64;
    let diff_ci95 = (diff - half, diff + half);
    let scale = |x: f64| 100.0 * x / base_mean;
    let pct_ok = base_mean != 0.0;
    Some(Change {
        diff,
        se: if zero_variance { 0.0 } else { se },
        diff_ci95,
        df,
        t,
        p_value,
        zero_variance,
        pct: pct_ok.then(|| scale(diff)),
        pct_ci95: pct_ok.then(|| (scale(diff_ci95.0), scale(diff_ci95.1))),
    })
}

/// Gauss–Jordan inverse with partial pivoting; `None` when the matrix is singular.
fn invert(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut inv: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
        .collect();
    let scale = a
        .iter()
        .flatten()
        .fold(0.0_f64, |m, v| m.max(v.abs()))
        .max(1.0);
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() < 1e-9 * scale {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        for j in 0..n {
            a[col][j] /= d;
            inv[col][j] /= d;
        }
        for r in 0..n {
            if r != col {
                let f = a[r][col];
                if f != 0.0 {
                    for j in 0..n {
                        a[r][j] -= f * a[col][j];
                        inv[r][j] -= f * inv[col][j];
                    }
                }
            }
        }
    }
    Some(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs<'a>(hosts: &[(&'a str, &[f64])]) -> Vec<(&'a str, f64)> {
        hosts
            .iter()
            .flat_map(|(h, xs)| xs.iter().map(move |x| (*h, *x)))
            .collect()
    }

    /// Pinned to statsmodels 0.15: `ols("y ~ C(cell, Treatment('base')) + C(host)")` on these
    /// runs gives params 26.222222222222058, bse 4.409585518440984, df_resid 8, t
    /// 5.946641042011804, p 0.0003432680469821583, conf_int(0.05) [16.05369978216074,
    /// 36.390744662283375].
    #[test]
    fn the_host_is_a_block_as_statsmodels_fits_it() {
        let base = runs(&[
            ("a", &[1000.0, 1012.0, 995.0]),
            ("b", &[905.0, 898.0, 910.0]),
        ]);
        let treat = runs(&[("a", &[1031.0, 1040.0, 1022.0]), ("b", &[930.0, 925.0])]);
        let c = blocked(&base, &treat).expect("a blocked comparison");
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        assert!(close(c.diff, 26.222222222222058), "{c:?}");
        assert!(close(c.se, 4.409585518440984), "{c:?}");
        assert_eq!(c.df, 8.0);
        assert!(close(c.t, 5.946641042011804), "{c:?}");
        assert!((c.p_value - 0.0003432680469821583).abs() < 1e-9, "{c:?}");
        assert!((c.diff_ci95.0 - 16.05369978216074).abs() < 1e-6, "{c:?}");
        assert!((c.diff_ci95.1 - 36.390744662283375).abs() < 1e-6, "{c:?}");
        let base_mean = (1000.0 + 1012.0 + 995.0 + 905.0 + 898.0 + 910.0) / 6.0;
        assert!(close(
            c.pct.unwrap(),
            100.0 * 26.222222222222058 / base_mean
        ));
        // Welch over the pooled runs sees the host difference as noise: no significance.
        let pooled = |r: &[(&str, f64)]| -> Vec<f64> { r.iter().map(|x| x.1).collect() };
        let w = crate::stats::welch(
            &crate::stats::summarize(&pooled(&base)).unwrap(),
            &crate::stats::summarize(&pooled(&treat)).unwrap(),
        )
        .unwrap();
        assert!(w.p_value > 0.3, "{w:?}");
    }

    #[test]
    fn one_host_or_a_confounded_design_is_not_blocked() {
        let one = runs(&[("a", &[1.0, 2.0, 3.0])]);
        assert_eq!(blocked(&one, &one), None);
        // Each cell on its own host: the cell cannot be told from the host.
        let base = runs(&[("a", &[1.0, 2.0, 3.0])]);
        let treat = runs(&[("b", &[4.0, 5.0, 6.0])]);
        assert_eq!(blocked(&base, &treat), None);
    }
}
