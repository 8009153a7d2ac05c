//! The race's model at one look: `ln y ~ cell + round` over the runs of every cell still in
//! the race, fitted by least squares, and the contrast of any two cells with its standard
//! error.
//!
//! One model for all the survivors, not one per pair: the residual variance is pooled over
//! every cell and round, so at the first look (3 rounds of 42 cells) the contrasts have about
//! `(cells − 1)·(rounds − 1)` degrees of freedom instead of the 2 a pair's own model would
//! leave. It is the model `statsmodels.formula.api.ols("y ~ C(cell) + C(round)")` fits, with
//! treatment coding (the first cell and the first round are the reference levels); a
//! contrast's variance is `s²·aᵀ(XᵀX)⁻¹a`, as its `t_test` computes it.

/// The fitted model: each cell's effect (the first cell's is 0) and what the contrasts need.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// Cell effects on the log scale, relative to the first cell.
    pub effects: Vec<f64>,
    /// `(XᵀX)⁻¹` restricted to the cell columns (index 0 = the second cell).
    inv: Vec<Vec<f64>>,
    /// Residual variance `RSS / (n − p)`.
    pub s2: f64,
    /// Residual degrees of freedom `n − p`.
    pub df: f64,
}

/// One contrast: `effect[a] − effect[b]` with its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contrast {
    pub estimate: f64,
    pub se: f64,
    pub df: f64,
}

impl Pooled {
    /// The contrast of cell `a` against cell `b` (indices into the fitted cells).
    pub fn contrast(&self, a: usize, b: usize) -> Contrast {
        // The cell columns start at the second cell: cell i > 0 is column i − 1.
        let at = |i: usize, j: usize| -> f64 {
            if i == 0 || j == 0 {
                0.0
            } else {
                self.inv[i - 1][j - 1]
            }
        };
        let var = at(a, a) + at(b, b) - 2.0 * at(a, b);
        Contrast {
            estimate: self.effects[a] - self.effects[b],
            se: (self.s2 * var.max(0.0)).sqrt(),
            df: self.df,
        }
    }
}

/// Least squares of `y` (already on the log scale) on the cell (`cell[i]` in `0..cells`) and
/// the round (`round[i]` in `0..rounds`). `None` when the design is singular (a cell or a
/// round without runs, or cells that the rounds cannot separate) or leaves no residual
/// degree of freedom.
pub fn fit(
    y: &[f64],
    cell: &[usize],
    round: &[usize],
    cells: usize,
    rounds: usize,
) -> Option<Pooled> {
    let n = y.len();
    if cells < 2 || rounds == 0 || cell.len() != n || round.len() != n {
        return None;
    }
    let p = cells + rounds - 1;
    if n <= p {
        return None;
    }
    // Columns: the cell dummies (cells 1..), the round dummies (rounds 1..), the intercept.
    let row = |i: usize| -> Vec<f64> {
        let mut x = vec![0.0; p];
        if cell[i] > 0 {
            x[cell[i] - 1] = 1.0;
        }
        if round[i] > 0 {
            x[cells - 1 + round[i] - 1] = 1.0;
        }
        x[p - 1] = 1.0;
        x
    };
    let mut xtx = vec![vec![0.0; p]; p];
    let mut xty = vec![0.0; p];
    for (i, yi) in y.iter().enumerate() {
        let x = row(i);
        for a in 0..p {
            if x[a] == 0.0 {
                continue;
            }
            xty[a] += x[a] * yi;
            for b in 0..p {
                xtx[a][b] += x[a] * x[b];
            }
        }
    }
    let inv = invert(xtx)?;
    let beta: Vec<f64> = inv
        .iter()
        .map(|r| r.iter().zip(&xty).map(|(a, b)| a * b).sum())
        .collect();
    let rss: f64 = (0..n)
        .map(|i| {
            let fitted: f64 = row(i).iter().zip(&beta).map(|(a, b)| a * b).sum();
            (y[i] - fitted).powi(2)
        })
        .sum();
    let df = (n - p) as f64;
    let mut effects = vec![0.0];
    effects.extend_from_slice(&beta[..cells - 1]);
    Some(Pooled {
        effects,
        inv: inv[..cells - 1]
            .iter()
            .map(|r| r[..cells - 1].to_vec())
            .collect(),
        s2: rss / df,
        df,
    })
}

/// Relative pivot under which the matrix counts as singular.
const SINGULAR: f64 = 1e-10;

/// Gauss–Jordan inversion with partial pivoting of a symmetric positive semi-definite matrix;
/// `None` when it is singular.
fn invert(mut a: Vec<Vec<f64>>) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let scale = a
        .iter()
        .enumerate()
        .map(|(i, r)| r[i].abs())
        .fold(0.0, f64::max);
    let mut inv: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for col in 0..n {
        let pivot = (col..n).max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))?;
        if a[pivot][col].abs() <= SINGULAR * scale.max(1.0) {
            return None;
        }
        a.swap(col, pivot);
        inv.swap(col, pivot);
        let d = a[col][col];
        a[col].iter_mut().for_each(|v| *v /= d);
        inv[col].iter_mut().for_each(|v| *v /= d);
        let (prow, irow) = (a[col].clone(), inv[col].clone());
        for r in 0..n {
            let f = a[r][col];
            if r == col || f == 0.0 {
                continue;
            }
            a[r].iter_mut().zip(&prow).for_each(|(v, p)| *v -= f * p);
            inv[r].iter_mut().zip(&irow).for_each(|(v, p)| *v -= f * p);
        }
    }
    Some(inv)
}
