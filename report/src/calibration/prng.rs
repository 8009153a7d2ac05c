//! A small seeded PRNG for the calibration simulation: xoshiro256** seeded by splitmix64,
//! normal deviates by Box–Muller.

/// Deterministic pseudo-random numbers from a seed.
#[derive(Debug, Clone)]
pub struct Prng {
    s: [u64; 4],
    spare: Option<f64>,
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Prng {
    pub fn new(seed: u64) -> Prng {
        let mut x = seed;
        Prng {
            s: [
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
                splitmix64(&mut x),
            ],
            spare: None,
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
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
