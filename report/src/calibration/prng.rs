//! The calibration simulation's seeded numbers: the script language's xoshiro256** (seeded
//! by splitmix64), normal deviates by Box–Muller.

use blocklab_script::prng::Xoshiro256;

/// Deterministic pseudo-random numbers from a seed.
#[derive(Debug, Clone)]
pub struct Prng {
    x: Xoshiro256,
    spare: Option<f64>,
}

impl Prng {
    pub fn new(seed: u64) -> Prng {
        Prng {
            x: Xoshiro256::seed(seed),
            spare: None,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.x.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.x.unit()
    }

    /// Standard normal.
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        self.spare = Some(r * s);
        r * c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_roughly_normal() {
        let mut a = Prng::new(7);
        let mut b = Prng::new(7);
        assert_eq!(a.next_u64(), b.next_u64());
        let mut r = Prng::new(1);
        let xs: Vec<f64> = (0..20_000).map(|_| r.normal()).collect();
        let (m, sd) = crate::stats::mean_stddev(&xs).expect("non-empty");
        assert!(m.abs() < 0.03 && (sd - 1.0).abs() < 0.03, "{m} {sd}");
        let u: Vec<f64> = (0..20_000).map(|_| r.uniform()).collect();
        assert!(u.iter().all(|x| (0.0..1.0).contains(x)));
        let (m, _) = crate::stats::mean_stddev(&u).expect("non-empty");
        assert!((m - 0.5).abs() < 0.01, "{m}");
    }
}
