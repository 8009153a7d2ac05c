//! The random generators TPC-C specifies (clause 2.1.6 and 4.3.2): uniform integers,
//! NURand, a-strings and n-strings, the customer last-name syllables, negative-exponential
//! think times. The script language's xoshiro256** keeps generation cheap and reproducible
//! from a seed.

use blocklab_script::prng::Xoshiro256;

/// The ten syllables customer last names are made of (clause 4.3.2.3).
const SYLLABLES: [&str; 10] = [
    "BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING",
];

const ALNUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// The NURand C constant for customer last names used by the load. The run's constant is
/// derived from it so that the difference satisfies clause 2.1.6.1.
pub const C_LAST_LOAD: i64 = 157;

/// TPC-C's generators over xoshiro256** seeded through splitmix64.
#[derive(Clone, Debug)]
pub struct Rng {
    x: Xoshiro256,
}

impl Rng {
    pub fn seed(seed: u64) -> Rng {
        Rng {
            x: Xoshiro256::seed(seed),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.x.next_u64()
    }

    /// A uniform integer in `lo..=hi`.
    pub fn uniform(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let n = (hi - lo) as u64 + 1;
        lo + ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as i64
    }

    /// As [`Rng::uniform`], for the i32 columns.
    pub fn int(&mut self, lo: i32, hi: i32) -> i32 {
        self.uniform(i64::from(lo), i64::from(hi)) as i32
    }

    /// A uniform float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.x.unit()
    }

    /// NURand(A, x, y) with run-time constant `c` (clause 2.1.6).
    pub fn nurand(&mut self, a: i64, x: i64, y: i64, c: i64) -> i64 {
        (((self.uniform(0, a) | self.uniform(x, y)) + c) % (y - x + 1)) + x
    }

    /// Appends a random alphanumeric string of `min..=max` characters.
    pub fn astring(&mut self, out: &mut Vec<u8>, min: i64, max: i64) {
        let n = self.uniform(min, max);
        for _ in 0..n {
            out.push(ALNUM[self.uniform(0, 61) as usize]);
        }
    }

    /// As [`Rng::astring`], into a new `String`.
    pub fn astring_owned(&mut self, min: i64, max: i64) -> String {
        let mut v = Vec::with_capacity(max as usize);
        self.astring(&mut v, min, max);
        String::from_utf8_lossy(&v).into_owned()
    }

    /// Appends `n` random digits.
    pub fn nstring(&mut self, out: &mut Vec<u8>, n: usize) {
        for _ in 0..n {
            out.push(b'0' + self.uniform(0, 9) as u8);
        }
    }

    /// Appends an i_data / s_data value: an a-string of 26..50 characters, 10% of them with
    /// "ORIGINAL" at a random position (clause 4.3.3.1).
    pub fn data_original(&mut self, out: &mut Vec<u8>) {
        let start = out.len();
        self.astring(out, 26, 50);
        if self.uniform(1, 10) == 1 {
            let len = out.len() - start;
            let at = start + self.uniform(0, (len - 8) as i64) as usize;
            out[at..at + 8].copy_from_slice(b"ORIGINAL");
        }
    }

    /// Negative-exponential with `mean`, capped at ten times the mean (clause 5.2.5.4).
    pub fn neg_exp(&mut self, mean: f64) -> f64 {
        let u = self.unit().max(1e-12);
        (-u.ln() * mean).min(10.0 * mean)
    }

    /// A random permutation of `1..=n`.
    pub fn permutation(&mut self, n: i32) -> Vec<i32> {
        let mut v: Vec<i32> = (1..=n).collect();
        for i in (1..v.len()).rev() {
            let j = self.uniform(0, i as i64) as usize;
            v.swap(i, j);
        }
        v
    }
}

/// The customer last name of number `num` (0..=999): three syllables.
pub fn last_name(num: i64) -> String {
    let n = num.clamp(0, 999) as usize;
    let mut s = String::with_capacity(15);
    for d in [n / 100, (n / 10) % 10, n % 10] {
        s.push_str(SYLLABLES[d]);
    }
    s
}

/// The NURand C constants of a run (clause 2.1.6.1).
#[derive(Clone, Copy, Debug)]
pub struct NuConstants {
    pub c_last: i64,
    pub c_id: i64,
    pub ol_i_id: i64,
}

impl NuConstants {
    /// Constants for a run: C for c_last differs from the load's by 65..=119, but not 96 or
    /// 112; the others are uniform.
    pub fn for_run(rng: &mut Rng) -> NuConstants {
        let delta = loop {
            let d = rng.uniform(65, 119);
            if d != 96 && d != 112 {
                break d;
            }
        };
        let c_last = if C_LAST_LOAD + delta <= 255 {
            C_LAST_LOAD + delta
        } else {
            C_LAST_LOAD - delta
        };
        NuConstants {
            c_last,
            c_id: rng.uniform(0, 1023),
            ol_i_id: rng.uniform(0, 8191),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_names_and_ranges() {
        assert_eq!(last_name(0), "BARBARBAR");
        assert_eq!(last_name(371), "PRICALLYOUGHT");
        assert_eq!(last_name(999), "EINGEINGEING");
        let mut r = Rng::seed(7);
        for _ in 0..10_000 {
            let v = r.nurand(1023, 1, 3000, 259);
            assert!((1..=3000).contains(&v));
            let u = r.uniform(5, 15);
            assert!((5..=15).contains(&u));
        }
        let c = NuConstants::for_run(&mut r);
        let d = (c.c_last - C_LAST_LOAD).abs();
        assert!((65..=119).contains(&d) && d != 96 && d != 112, "{c:?}");
        assert!((0..=255).contains(&c.c_last));
    }

    #[test]
    fn original_is_placed_inside() {
        let mut r = Rng::seed(1);
        let mut hits = 0;
        for _ in 0..1000 {
            let mut v = Vec::new();
            r.data_original(&mut v);
            assert!((26..=50).contains(&v.len()));
            if v.windows(8).any(|w| w == b"ORIGINAL") {
                hits += 1;
            }
        }
        assert!((50..=160).contains(&hits), "{hits}");
    }
}
