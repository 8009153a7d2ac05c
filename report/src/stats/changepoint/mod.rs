//! Change points of an effect over an ordered series (PostgreSQL versions, git commits): where
//! the page-size effect measured at each point shifts, with the shift's magnitude and p-value.
//!
//! Algorithm: E-Divisive with means (Matteson & James 2014, "A nonparametric approach for
//! multiple change point analysis of multivariate data"), as MongoDB's
//! `signal-processing-algorithms` implements it (the detector Hunter, now Apache Otava, was
//! built on):
//!
//! - The split statistic of a window `x_a..x_b` at `τ` (left `x_a..x_τ`, right `x_τ..x_b`,
//!   sizes `n` and `m`) is the energy divergence with exponent α = 1,
//!   `q̂(τ) = n·m/(n+m) · (2/(n·m) Σ|x_i - y_j| - 1/n² Σ|x_i - x_k| - 1/m² Σ|y_j - y_l|)`
//!   (the sums over all pairs, as the reference does; `q̂(a) = 0`). [`q_hat`] gives it for
//!   every split of a window.
//! - Each level takes, in every window between the change points found so far, the split of
//!   largest `q̂`, and the largest of those is the level's candidate.
//! - Its significance is a permutation test: each of `permutations` rounds shuffles every
//!   window's values (the PRNG is `blocklab-script`'s xoshiro256**, seeded by
//!   [`Options::seed`]) and takes the largest `q̂` over all windows; the p-value is
//!   `(1 + #{rounds ≥ candidate}) / (1 + permutations)`. The candidate is a change point when
//!   `p ≤ sig_level`, and the next level looks again; the first candidate above the level
//!   ends the search. The reference counts `#{rounds ≥ candidate} / (1 + permutations)`;
//!   the `+ 1` here makes the p-value a valid one (never 0; Matteson & James, and R's `ecp`).
//!   With a fixed seed the p-values, hence the change points, are reproducible.
//!
//! Why E-Divisive and not Otava's default (Apache Otava 0.8 `compute_change_points`: the
//! candidates of Matteson & James's `q̂` maximized over the split and the window's end, in
//! sliding windows, each judged by Student's t-test between the segments either side, then a
//! merge step that drops the weakest): the permutation test assumes nothing of the effect's
//! distribution, while the t-test assumes normal segments and, on the short series a
//! `kind = "series"` job measures (a handful of versions, a few dozen commits), one outlier
//! either side moves its p-value a lot; and the sliding windows and the merge matter for the
//! long histories Otava watches, not for a series of a few dozen points. Otava's t-test
//! variant is deterministic; this one is as well, once the seed is fixed.
//!
//! A change point's magnitude ([`ChangePoint::magnitude`]) is the difference of the means of
//! the segments either side, in the series' units. When the series holds log ratios (each
//! point's `Δ = ln(level_t / level_b)`, [`crate::stats::delta`]),
//! [`ChangePoint::magnitude_pct`] is `100·(exp(after - before) - 1)`: how much the ratio itself
//! changed, in %; [`ChangePoint::before_pct`] and [`ChangePoint::after_pct`] are the effect
//! either side as % changes.
//!
//! Given each point's standard error ([`e_divisive_measured`]), a candidate must also pass
//! the measurement check ([`measured`]): the segments either side, each pooled by its points'
//! precision, differ at the same level. A series whose points scatter only by their own
//! measurement noise then shows no change point, whatever shape the permutation test finds.

use blocklab_script::prng::Xoshiro256;

pub use super::ratio::pct_of_log;

pub mod measured;

pub use measured::{Measured, Precision, check};

/// The significance level of a candidate split when the job names none.
pub const DEFAULT_SIG_LEVEL: f64 = 0.05;
/// Permutation rounds a candidate's p-value is estimated from.
pub const DEFAULT_PERMUTATIONS: u32 = 999;
/// The permutation test's seed when the job names none.
pub const DEFAULT_SEED: u64 = 0x0b10_c1ab;

/// Why a series cannot be searched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangePointError {
    #[error("the series' point {index} is not a finite number ({value})")]
    NotFinite { index: usize, value: f64 },
    #[error("the significance level must lie in (0, 1), not {0}")]
    SigLevel(f64),
    #[error("the permutation test needs at least one permutation")]
    NoPermutations,
    #[error("the series has {values} points but {precision} standard errors")]
    PrecisionLength { values: usize, precision: usize },
}

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// A candidate is a change point when its p-value is at most this.
    pub sig_level: f64,
    pub permutations: u32,
    pub seed: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            sig_level: DEFAULT_SIG_LEVEL,
            permutations: DEFAULT_PERMUTATIONS,
            seed: DEFAULT_SEED,
        }
    }
}

/// One window's best split: the first point of its right part, and its `q̂`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub index: usize,
    pub q: f64,
}

/// One level of the search: the windows between the change points found before it, each
/// window's best split, and the p-value of the best of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Level {
    /// `[start, end)` of each window, in order.
    pub windows: Vec<(usize, usize)>,
    /// Each window's best split, in the windows' order.
    pub candidates: Vec<Candidate>,
    /// Which of `candidates` is the level's (the first of the largest `q̂`).
    pub best: usize,
    pub p_value: f64,
    /// The measurement check of the candidate's split within its window (`None` without the
    /// points' precision).
    pub measured: Option<Measured>,
    /// `p_value ≤ sig_level` (and a positive `q̂`), and the measurement check's p-value as
    /// well when there is one: the candidate became a change point.
    pub significant: bool,
}

impl Level {
    pub fn candidate(&self) -> Candidate {
        self.candidates[self.best]
    }
}

/// A change point: the series shifts between `index - 1` and `index`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// The first point of the new segment.
    pub index: usize,
    /// The level that found it (0 first).
    pub level: usize,
    pub q: f64,
    pub p_value: f64,
    /// The measurement check's p-value, at the level that found it.
    pub measured_p: Option<f64>,
    /// The mean of the segment before `index` (from the previous change point or the start),
    /// and of the segment from `index` (to the next change point or the end).
    pub mean_before: f64,
    pub mean_after: f64,
}

impl ChangePoint {
    /// `mean_after - mean_before`, in the series' units.
    pub fn magnitude(&self) -> f64 {
        self.mean_after - self.mean_before
    }

    /// For a series of log ratios: the change of the ratio, `100·(exp(magnitude) - 1)` %.
    pub fn magnitude_pct(&self) -> f64 {
        pct_of_log(self.magnitude())
    }

    /// For a series of log ratios: the effect before the change point, as a % change.
    pub fn before_pct(&self) -> f64 {
        pct_of_log(self.mean_before)
    }

    /// For a series of log ratios: the effect from the change point on, as a % change.
    pub fn after_pct(&self) -> f64 {
        pct_of_log(self.mean_after)
    }
}

/// The search's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// In the series' order.
    pub change_points: Vec<ChangePoint>,
    /// Every level looked at, the last one the first candidate not significant (none when the
    /// series has fewer than 2 points or no split of positive `q̂`).
    pub levels: Vec<Level>,
}

/// `q̂(τ)` of every split `τ` of `values` (left `values[..τ]`, right `values[τ..]`); `q̂(0)`
/// is 0. The same running sums, in the same order, as the reference's `t_stat_values`.
pub fn q_hat(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let d = |i: usize, j: usize| (values[i] - values[j]).abs();
    // Σ|x_i - y_j| across the split, Σ_{i<k}|x_i - x_k| left, Σ_{j<l}|y_j - y_l| right.
    let mut cross = 0.0;
    let mut left = 0.0;
    let mut right = 0.0;
    for row in 0..n {
        right += (row..n).map(|col| d(row, col)).sum::<f64>();
    }
    let mut q = Vec::with_capacity(n);
    for tau in 0..n {
        q.push(split_q(cross, 2.0 * left, 2.0 * right, tau, n - tau));
        let column = (0..tau).map(|i| d(i, tau)).sum::<f64>();
        let row = (tau..n).map(|j| d(tau, j)).sum::<f64>();
        cross = cross - column + row;
        left += column;
        right -= row;
    }
    q
}

fn split_q(cross: f64, left: f64, right: f64, n: usize, m: usize) -> f64 {
    let (nf, mf) = (n as f64, m as f64);
    let cross = if n == 0 || m == 0 {
        0.0
    } else {
        cross * (2.0 / (nf * mf))
    };
    let left = if n == 0 { 0.0 } else { left / (nf * nf) };
    let right = if m == 0 { 0.0 } else { right / (mf * mf) };
    nf * mf / (nf + mf) * (cross - left - right)
}

/// The first largest `q̂` of a window (offset by `start`).
fn best_split(values: &[f64], start: usize) -> Candidate {
    let mut best = Candidate {
        index: start,
        q: f64::NEG_INFINITY,
    };
    for (tau, q) in q_hat(values).into_iter().enumerate() {
        if q > best.q {
            best = Candidate {
                index: start + tau,
                q,
            };
        }
    }
    best
}

/// Uniform in `[0, bound)` by rejection.
fn below(rng: &mut Xoshiro256, bound: u64) -> u64 {
    let zone = u64::MAX - u64::MAX % bound;
    loop {
        let v = rng.next_u64();
        if v < zone {
            return v % bound;
        }
    }
}

fn shuffle(rng: &mut Xoshiro256, xs: &mut [f64]) {
    for i in (1..xs.len()).rev() {
        let j = below(rng, i as u64 + 1) as usize;
        xs.swap(i, j);
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// E-Divisive with means over `values` (see the module's doc).
pub fn e_divisive(values: &[f64], options: &Options) -> Result<Detection, ChangePointError> {
    e_divisive_measured(values, None, options)
}

/// E-Divisive with means over `values`, each candidate also checked against the points'
/// `precision` (one per value) when given.
pub fn e_divisive_measured(
    values: &[f64],
    precision: Option<&[Precision]>,
    options: &Options,
) -> Result<Detection, ChangePointError> {
    if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(ChangePointError::NotFinite { index, value });
    }
    if !(options.sig_level > 0.0 && options.sig_level < 1.0) {
        return Err(ChangePointError::SigLevel(options.sig_level));
    }
    if options.permutations == 0 {
        return Err(ChangePointError::NoPermutations);
    }
    if let Some(p) = precision.filter(|p| p.len() != values.len()) {
        return Err(ChangePointError::PrecisionLength {
            values: values.len(),
            precision: p.len(),
        });
    }
    let mut rng = Xoshiro256::seed(options.seed);
    let mut found: Vec<(usize, usize, f64, f64, Option<f64>)> = Vec::new(); // index, level, q, p, measured p
    let mut levels = Vec::new();
    let mut scratch = values.to_vec();
    while values.len() >= 2 {
        let mut bounds: Vec<usize> = found.iter().map(|c| c.0).collect();
        bounds.sort_unstable();
        bounds.insert(0, 0);
        bounds.push(values.len());
        let windows: Vec<(usize, usize)> = bounds.windows(2).map(|w| (w[0], w[1])).collect();
        let candidates: Vec<Candidate> = windows
            .iter()
            .map(|&(a, b)| best_split(&values[a..b], a))
            .collect();
        let mut best = 0;
        for (i, c) in candidates.iter().enumerate() {
            if c.q > candidates[best].q {
                best = i;
            }
        }
        let q = candidates[best].q;
        if q <= 0.0 {
            break;
        }
        let mut at_least = 0u32;
        for _ in 0..options.permutations {
            let mut top = f64::NEG_INFINITY;
            for &(a, b) in &windows {
                let window = &mut scratch[a..b];
                window.copy_from_slice(&values[a..b]);
                shuffle(&mut rng, window);
                top = q_hat(window).into_iter().fold(top, f64::max);
            }
            if top >= q {
                at_least += 1;
            }
        }
        let p_value = f64::from(at_least + 1) / f64::from(options.permutations + 1);
        let (a, b) = windows[best];
        let measured = precision
            .and_then(|precision| check(values, precision, (a, candidates[best].index, b)));
        let significant =
            p_value <= options.sig_level && measured.is_none_or(|m| m.p_value <= options.sig_level);
        let level = levels.len();
        levels.push(Level {
            windows,
            candidates: candidates.clone(),
            best,
            p_value,
            measured,
            significant,
        });
        if !significant {
            break;
        }
        found.push((
            candidates[best].index,
            level,
            q,
            p_value,
            measured.map(|m| m.p_value),
        ));
    }
    found.sort_by_key(|c| c.0);
    let mut cuts: Vec<usize> = found.iter().map(|c| c.0).collect();
    cuts.insert(0, 0);
    cuts.push(values.len());
    let change_points = found
        .iter()
        .enumerate()
        .map(|(k, &(index, level, q, p_value, measured_p))| ChangePoint {
            index,
            level,
            q,
            p_value,
            measured_p,
            mean_before: mean(&values[cuts[k]..cuts[k + 1]]),
            mean_after: mean(&values[cuts[k + 1]..cuts[k + 2]]),
        })
        .collect();
    Ok(Detection {
        change_points,
        levels,
    })
}

#[cfg(test)]
mod tests;
