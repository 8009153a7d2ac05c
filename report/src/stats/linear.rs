//! The additive linear model `y = μ + cell + block₁ + block₂ + … + ε` over the runs of two
//! cells, fitted by least squares, and the cell's coefficient with its standard error.
//!
//! Each block factor (the round, the database host) enters as treatment-coded dummies, as
//! `statsmodels.formula.api.ols("y ~ C(cell) + C(round) + C(host)")` codes them. A block column
//! that the columns before it already span (a host that is always the same within a round,
//! say) is left out, as a pseudo-inverse fit leaves it without effect: the cell's coefficient,
//! its standard error and the residual degrees of freedom `n - rank` are those statsmodels
//! reports. The cell's column comes last; when the blocks span it, the design cannot tell the
//! cell from the blocks and there is no fit.
//!
//! By the Frisch–Waugh–Lovell theorem the cell's coefficient is `⟨r, y⟩ / ‖r‖²` where `r` is
//! the cell's column less its projection on the other columns, and its variance is
//! `s² / ‖r‖²` with `s² = RSS / (n - rank)`; both come out of a Gram–Schmidt orthogonalisation
//! of the columns (twice over, for accuracy).

/// The fitted cell coefficient of the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fit {
    /// The treatment cell's coefficient (its change against the baseline cell).
    pub coef: f64,
    /// Its standard error, `√(s²/‖r‖²)`.
    pub se: f64,
    /// Residual degrees of freedom, `n - rank`.
    pub df: f64,
}

/// Relative norm under which a column counts as spanned by the ones before it.
const DEPENDENT: f64 = 1e-10;

/// The columns accepted so far, orthonormal.
struct Basis {
    q: Vec<Vec<f64>>,
}

impl Basis {
    /// `v` less its projection on the basis (two passes of modified Gram–Schmidt).
    fn residual(&self, mut v: Vec<f64>) -> Vec<f64> {
        for _ in 0..2 {
            for q in &self.q {
                let d = dot(q, &v);
                v.iter_mut().zip(q).for_each(|(x, qi)| *x -= d * qi);
            }
        }
        v
    }

    /// Adds `col` when the basis does not span it; returns the norm of what it added (`None`
    /// when spanned).
    fn add(&mut self, col: Vec<f64>) -> Option<f64> {
        let scale = dot(&col, &col).sqrt();
        let r = self.residual(col);
        let norm = dot(&r, &r).sqrt();
        if scale == 0.0 || norm <= DEPENDENT * scale {
            return None;
        }
        self.q.push(r.into_iter().map(|x| x / norm).collect());
        Some(norm)
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Least squares of `y` on an intercept, the block factors and the cell: run `i` has value
/// `y[i]`, is of the treatment cell when `treated[i]`, and has level `factors[f][i]` of block
/// factor `f`. `None` when the blocks span the cell's column (the design cannot separate
/// them) or no residual degree of freedom is left.
pub fn cell_effect(y: &[f64], treated: &[bool], factors: &[Vec<usize>]) -> Option<Fit> {
    let n = y.len();
    if treated.len() != n || factors.iter().any(|f| f.len() != n) {
        return None;
    }
    if let [levels] = factors {
        return one_factor(y, treated, levels);
    }
    let mut basis = Basis { q: Vec::new() };
    basis.add(vec![1.0; n])?;
    for levels in factors {
        let mut distinct: Vec<usize> = levels.clone();
        distinct.sort_unstable();
        distinct.dedup();
        for level in distinct.iter().skip(1) {
            let col = levels
                .iter()
                .map(|l| if l == level { 1.0 } else { 0.0 })
                .collect();
            basis.add(col);
        }
    }
    let cell: Vec<f64> = treated.iter().map(|&t| if t { 1.0 } else { 0.0 }).collect();
    let r_norm = basis.add(cell)?;
    let rank = basis.q.len();
    if n <= rank {
        return None;
    }
    let q_cell = basis.q.last()?;
    let coef = dot(q_cell, y) / r_norm;
    let resid = basis.residual(y.to_vec());
    let df = (n - rank) as f64;
    let s2 = dot(&resid, &resid) / df;
    Some(Fit {
        coef,
        se: s2.sqrt() / r_norm,
        df,
    })
}

/// Each value less the mean of its level's values: `v` less its projection on the intercept
/// and the dummies of one factor, whose columns together span exactly the levels' indicators.
fn demeaned(v: &[f64], levels: &[usize], index: &[usize], groups: usize) -> Vec<f64> {
    let mut sum = vec![0.0; groups];
    let mut count = vec![0.0; groups];
    for (x, &l) in v.iter().zip(levels) {
        sum[index[l]] += x;
        count[index[l]] += 1.0;
    }
    v.iter()
        .zip(levels)
        .map(|(x, &l)| x - sum[index[l]] / count[index[l]])
        .collect()
}

/// [`cell_effect`] with one block factor, in O(n): the blocks' columns are one indicator per
/// level (rank = the number of levels), so projecting them out subtracts each level's mean.
fn one_factor(y: &[f64], treated: &[bool], levels: &[usize]) -> Option<Fit> {
    let n = y.len();
    if n == 0 {
        return None;
    }
    let mut distinct: Vec<usize> = levels.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    let groups = distinct.len();
    let top = distinct.last().copied().unwrap_or(0);
    let mut index = vec![0; top + 1];
    for (i, &l) in distinct.iter().enumerate() {
        index[l] = i;
    }
    let cell: Vec<f64> = treated.iter().map(|&t| if t { 1.0 } else { 0.0 }).collect();
    let scale = dot(&cell, &cell).sqrt();
    let r = demeaned(&cell, levels, &index, groups);
    let rr = dot(&r, &r);
    let r_norm = rr.sqrt();
    if scale == 0.0 || r_norm <= DEPENDENT * scale {
        return None;
    }
    let rank = groups + 1;
    if n <= rank {
        return None;
    }
    let y_dm = demeaned(y, levels, &index, groups);
    let coef = dot(&r, &y_dm) / rr;
    let resid: Vec<f64> = y_dm.iter().zip(&r).map(|(v, ri)| v - coef * ri).collect();
    let df = (n - rank) as f64;
    let s2 = dot(&resid, &resid) / df;
    Some(Fit {
        coef,
        se: s2.sqrt() / r_norm,
        df,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general Gram–Schmidt fit, for comparing the one-factor path with it.
    fn general(y: &[f64], treated: &[bool], levels: &[usize]) -> Option<Fit> {
        let mut basis = Basis { q: Vec::new() };
        basis.add(vec![1.0; y.len()])?;
        let mut distinct = levels.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        for level in distinct.iter().skip(1) {
            basis.add(
                levels
                    .iter()
                    .map(|l| f64::from(u8::from(l == level)))
                    .collect(),
            );
        }
        let r_norm = basis.add(treated.iter().map(|&t| f64::from(u8::from(t))).collect())?;
        let rank = basis.q.len();
        if y.len() <= rank {
            return None;
        }
        let coef = dot(basis.q.last()?, y) / r_norm;
        let resid = basis.residual(y.to_vec());
        let df = (y.len() - rank) as f64;
        Some(Fit {
            coef,
            se: (dot(&resid, &resid) / df).sqrt() / r_norm,
            df,
        })
    }

    #[test]
    fn one_factor_gives_the_general_fit() {
        // Three rounds (one unbalanced), the treated cell +2 over the baseline.
        let levels = [0, 0, 1, 1, 2, 2, 2, 5, 5];
        let treated = [false, true, false, true, false, true, true, false, true];
        let y = [10.0, 12.1, 11.0, 12.9, 9.0, 11.2, 10.9, 10.5, 12.4];
        let fast = one_factor(&y, &treated, &levels).expect("a fit");
        let slow = general(&y, &treated, &levels).expect("a fit");
        assert_eq!(fast.df, 4.0);
        assert_eq!(fast.df, slow.df);
        assert!((fast.coef - slow.coef).abs() < 1e-12, "{fast:?} {slow:?}");
        assert!((fast.se - slow.se).abs() < 1e-12, "{fast:?} {slow:?}");
        assert!(fast.coef > 1.5 && fast.coef < 2.5, "{fast:?}");
        // A cell the rounds span (every round all treated or all not) has no fit.
        assert_eq!(
            one_factor(
                &y,
                &[true, true, false, false, true, true, true, false, false],
                &levels
            ),
            None
        );
        assert_eq!(one_factor(&[], &[], &[]), None);
    }
}
