//! The measurement check of a candidate split: does the effect either side differ by more
//! than the points' own measurement noise?
//!
//! The permutation test sees only the points' estimates, so on a short series whose points
//! scatter by their measurement noise it finds a "shift" in about one search of twenty. Each
//! point's estimate comes with a standard error from its runs; a split is confirmed when the
//! segments' pooled effects differ at the same level:
//!
//! - each segment's effect is the inverse-variance weighted mean of its points' estimates
//!   (the fixed-effect pooling of a meta-analysis), `m = Σ wᵢxᵢ / Σ wᵢ` with `wᵢ = 1/seᵢ²`,
//!   whose variance is `1/Σ wᵢ`;
//! - `t = (m_right - m_left) / √(1/W_left + 1/W_right)`, with the Welch–Satterthwaite degrees
//!   of freedom of the points' variance components, `(Σ cᵢ)² / Σ (cᵢ²/dfᵢ)`, where
//!   `cᵢ = wᵢ/W²` is point `i`'s share of the difference's variance (`W` its segment's total
//!   weight);
//! - the p-value is two-sided, then multiplied by the window's number of splits (Bonferroni,
//!   capped at 1): the split was the best of them, so the raw p-value of the one chosen
//!   would be too small.
//!
//! Pooling assumes the points of a segment share one effect; when they scatter by more than
//! their intervals, the pooled variance is too small, which is why this check confirms the
//! permutation test (which sees exactly that scatter) and never replaces it.

use crate::stats::welch::{t_quantile, t_two_sided_p};

/// A point's estimate's standard error and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Precision {
    pub se: f64,
    pub df: f64,
}

impl Precision {
    /// From a change's 95% interval in % (`low`, `high`, t-based with `df` degrees of
    /// freedom, on the log scale as [`crate::stats::ratio`] computes it): `se` is the log
    /// interval's half width over `t(0.975, df)`.
    pub fn from_interval(low_pct: f64, high_pct: f64, df: f64) -> Precision {
        let width = (1.0 + high_pct / 100.0).ln() - (1.0 + low_pct / 100.0).ln();
        Precision {
            se: width / (2.0 * t_quantile(df)),
            df,
        }
    }

    /// Usable in the check: a positive, finite standard error and degrees of freedom.
    fn usable(&self) -> bool {
        self.se.is_finite() && self.se > 0.0 && self.df.is_finite() && self.df > 0.0
    }
}

/// The check of one split: the segments' pooled effects, the statistic and its p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub mean_before: f64,
    pub mean_after: f64,
    pub t: f64,
    pub df: f64,
    /// The split's own two-sided p-value.
    pub raw_p_value: f64,
    /// `raw_p_value` times the window's `end - start - 1` splits, at most 1.
    pub p_value: f64,
}

/// The pooled mean and total weight of a segment.
fn pool(values: &[f64], precision: &[Precision]) -> (f64, f64) {
    let weight: f64 = precision.iter().map(|p| 1.0 / (p.se * p.se)).sum();
    let sum: f64 = values
        .iter()
        .zip(precision)
        .map(|(x, p)| x / (p.se * p.se))
        .sum();
    (sum / weight, weight)
}

/// The check of `values[start..split]` against `values[split..end]`; `None` when a segment
/// is empty or a point's precision is not usable.
pub fn check(
    values: &[f64],
    precision: &[Precision],
    (start, split, end): (usize, usize, usize),
) -> Option<Measured> {
    if !(start < split && split < end && end <= values.len() && end <= precision.len()) {
        return None;
    }
    if !precision[start..end].iter().all(Precision::usable) {
        return None;
    }
    let (left, w_left) = pool(&values[start..split], &precision[start..split]);
    let (right, w_right) = pool(&values[split..end], &precision[split..end]);
    let variance = 1.0 / w_left + 1.0 / w_right;
    let share = |p: &Precision, w: f64| 1.0 / (p.se * p.se) / (w * w);
    let spread: f64 = precision[start..split]
        .iter()
        .map(|p| share(p, w_left).powi(2) / p.df)
        .chain(
            precision[split..end]
                .iter()
                .map(|p| share(p, w_right).powi(2) / p.df),
        )
        .sum();
    let df = variance * variance / spread;
    let t = (right - left) / variance.sqrt();
    let raw_p_value = t_two_sided_p(t, df);
    let splits = (end - start - 1) as f64;
    Some(Measured {
        mean_before: left,
        mean_after: right,
        t,
        df,
        raw_p_value,
        p_value: (raw_p_value * splits).min(1.0),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    //! Pinned to SciPy 1.17.1 and statsmodels (`combine_effects`, its fixed-effect mean and
    //! variance) on the points of a known-answer series whose permutation test alone found a
    //! second, false change point (9 points of 5 rounds, df 4):
    //!
    //! ```python
    //! x = log1p(pct / 100); se = (log1p(high / 100) - log1p(low / 100)) / (2 * t.ppf(0.975, 4))
    //! L, R = combine_effects(x[a:s], se[a:s]**2), combine_effects(x[s:b], se[s:b]**2)
    //! v = L.sd_eff_w_fe**2 + R.sd_eff_w_fe**2; t = (R.mean_effect_fe - L.mean_effect_fe) / sqrt(v)
    //! c = concat(w_L / w_L.sum()**2, w_R / w_R.sum()**2); df = v**2 / sum(c**2 / 4)
    //! p = 2 * t.sf(abs(t), df)
    //! ```
    use super::*;

    /// (change, low, high) in %, each point's 95% interval with 4 degrees of freedom.
    pub(crate) const KNOWN_ANSWER: [(f64, f64, f64); 9] = [
        (9.670915418121215, -5.311158721577803, 27.02351751546448),
        (4.810114117373511, -5.1744105188369325, 15.84594497542291),
        (-3.1209934176653604, -17.470479391526837, 13.723451283642152),
        (-4.837721798598087, -18.436968334430553, 11.028967505922198),
        (0.7459713867625131, -13.420769609876102, 17.2307804646431),
        (-24.964312754837703, -30.77574831589142, -18.66500217226125),
        (-30.83624739206927, -36.39156165402336, -24.79575353206862),
        (-21.349153677853828, -39.96540478418282, 3.039849022918946),
        (-29.999641499577322, -36.99603852303176, -22.226316007463083),
    ];

    pub(crate) fn known_answer() -> (Vec<f64>, Vec<Precision>) {
        KNOWN_ANSWER
            .iter()
            .map(|&(c, l, h)| ((1.0 + c / 100.0).ln(), Precision::from_interval(l, h, 4.0)))
            .unzip()
    }

    fn close(got: f64, want: f64) {
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1e-3),
            "{got} != {want}"
        );
    }

    #[test]
    fn standard_errors_from_intervals() {
        let (_, precision) = known_answer();
        let want = [
            0.05290507727534485,
            0.036057248790702,
            0.05773814504520274,
            0.05554135019806013,
            0.05458139998397295,
            0.029034455267736337,
            0.030157548963508946,
            0.09728173863869578,
            0.03792718907796431,
        ];
        for (p, w) in precision.iter().zip(want) {
            close(p.se, w);
            assert_eq!(p.df, 4.0);
        }
    }

    #[test]
    fn the_true_step_is_far_beyond_the_noise() {
        let (x, precision) = known_answer();
        let m = check(&x, &precision, (0, 5, 9)).expect("usable");
        close(m.mean_before, 0.022061745163090434);
        close(m.mean_after, -0.33026805695307077);
        close(m.t, -12.4310411554632);
        close(m.df, 29.171935960586943);
        close(m.raw_p_value, 3.501961037032965e-13);
        close(m.p_value, 8.0 * 3.501961037032965e-13);
    }

    #[test]
    fn a_shift_the_size_of_the_noise_is_not_confirmed() {
        let (x, precision) = known_answer();
        let m = check(&x, &precision, (0, 2, 5)).expect("usable");
        close(m.mean_before, 0.06135889960109226);
        close(m.mean_after, -0.02405782002552422);
        close(m.t, -1.944486134595126);
        close(m.df, 18.402151415611947);
        close(m.raw_p_value, 0.06728388140189728);
        // The best of 4 splits.
        close(m.p_value, 4.0 * 0.06728388140189728);
        let m = check(&x, &precision, (5, 7, 9)).expect("usable");
        close(m.t, -0.3626582870409882);
        close(m.df, 8.762544194485267);
        close(m.raw_p_value, 0.7254531177280104);
        assert_eq!(m.p_value, 1.0);
    }

    #[test]
    fn unusable_precision_or_split_gives_no_check() {
        let (x, mut precision) = known_answer();
        assert_eq!(check(&x, &precision, (0, 0, 5)), None);
        assert_eq!(check(&x, &precision, (0, 5, 5)), None);
        assert_eq!(check(&x, &precision, (0, 5, 10)), None);
        precision[3].se = 0.0;
        assert_eq!(check(&x, &precision, (0, 2, 5)), None);
        // A window without the point is still checked.
        assert!(check(&x, &precision, (5, 7, 9)).is_some());
        precision[6].df = f64::NAN;
        assert_eq!(check(&x, &precision, (5, 7, 9)), None);
    }
}
