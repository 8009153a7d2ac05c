//! Per-cell summaries over repetitions and the comparison against the baseline cell.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_sample_stddev() {
        // Reference: numpy.std([2,4,4,4,5,5,7,9], ddof=1) = 2.138089935299395
        let (m, sd) = mean_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).expect("non-empty");
        assert!((m - 5.0).abs() < 1e-12);
        assert!((sd - 2.138_089_935_299_395).abs() < 1e-12);
        assert_eq!(mean_stddev(&[3.0]), Some((3.0, 0.0)));
        assert_eq!(mean_stddev(&[]), None);
    }

    #[test]
    fn percent_change() {
        assert_eq!(pct_change(110.0, 100.0), Some(10.0));
        assert_eq!(pct_change(90.0, 100.0), Some(-10.0));
        assert_eq!(pct_change(1.0, 0.0), None);
    }
}
