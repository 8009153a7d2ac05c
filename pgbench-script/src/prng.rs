//! PostgreSQL's pseudo-random generator (xoroshiro128**, seeded through splitmix64) and
//! the deterministic pgbench functions built on it: `hash_fnv1a`, `hash_murmur2`,
//! `permute`, plus the random distributions of `random*()`. Written from the algorithms'
//! descriptions so that the deterministic functions return exactly pgbench's values.
//! [`xoshiro`] holds the other generator blocklab draws from (xoshiro256**, for the TPC-C-like
//! load and the calibration simulation), seeded by the same splitmix64.

mod splitmix;
pub mod xoshiro;

pub use splitmix::{splitmix64, splitmix64_mix};
pub use xoshiro::Xoshiro256;

const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;
const FNV_OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const MM2_MUL: u64 = 0xc6a4_a793_5bd1_e995;
const MM2_MUL_TIMES_8: u64 = 0x3525_3c9a_de8f_4ca8;
const MM2_ROT: u32 = 47;

pub const MIN_GAUSSIAN_PARAM: f64 = 2.0;
pub const MIN_ZIPFIAN_PARAM: f64 = 1.001;
pub const MAX_ZIPFIAN_PARAM: f64 = 1000.0;

/// The state of pg_prng: two 64-bit words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgPrng {
    s0: u64,
    s1: u64,
}

impl PgPrng {
    pub fn seed(seed: u64) -> PgPrng {
        let mut s = seed;
        let s0 = splitmix64(&mut s);
        let s1 = splitmix64(&mut s);
        if s0 == 0 && s1 == 0 {
            return PgPrng {
                s0: 0x5851_F42D_4C95_7F2D,
                s1: 0x1405_7B7E_F767_814F,
            };
        }
        PgPrng { s0, s1 }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s0;
        let sx = self.s1 ^ s0;
        let val = s0.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        self.s0 = s0.rotate_left(24) ^ sx ^ (sx << 16);
        self.s1 = sx.rotate_left(37);
        val
    }

    /// Uniform in `[lo, hi]` by bitmask rejection, as pg_prng_uint64_range.
    pub fn u64_range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        let range = hi - lo;
        let shift = range.leading_zeros();
        loop {
            let v = self.next_u64() >> shift;
            if v <= range {
                return lo + v;
            }
        }
    }

    /// Uniform in `[0, 1)` with 52 random bits.
    pub fn double(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }

    /// pgbench's `random(min, max)`; the caller checked that the range fits.
    pub fn uniform(&mut self, min: i64, max: i64) -> i64 {
        let span = max.wrapping_sub(min) as u64;
        min.wrapping_add(self.u64_range(0, span) as i64)
    }

    pub fn exponential(&mut self, min: i64, max: i64, param: f64) -> i64 {
        let cut = (-param).exp();
        let uniform = 1.0 - self.double();
        let r = -(cut + (1.0 - cut) * uniform).ln() / param;
        scaled(min, max, r)
    }

    pub fn gaussian(&mut self, min: i64, max: i64, param: f64) -> i64 {
        let stdev = loop {
            let r1 = 1.0 - self.double();
            let r2 = 1.0 - self.double();
            let s = (-2.0 * r1.ln()).sqrt() * (2.0 * std::f64::consts::PI * r2).sin();
            if s >= -param && s < param {
                break s;
            }
        };
        let r = (stdev + param) / (param * 2.0);
        scaled(min, max, r)
    }

    pub fn zipfian(&mut self, min: i64, max: i64, s: f64) -> i64 {
        let n = max - min + 1;
        if n <= 1 {
            return min;
        }
        let b = 2f64.powf(s - 1.0);
        let x = loop {
            let u = self.double();
            let v = self.double();
            let x = u.powf(-1.0 / (s - 1.0)).floor();
            let t = (1.0 + 1.0 / x).powf(s - 1.0);
            if v * x * (t - 1.0) / (b - 1.0) <= t / b && x <= n as f64 {
                break x;
            }
        };
        min - 1 + x as i64
    }

    /// A Poisson-distributed delay around `center` (rate limiting).
    pub fn poisson(&mut self, center: f64) -> i64 {
        let uniform = 1.0 - self.double();
        (-uniform.ln() * center + 0.5) as i64
    }
}

/// `min + (max - min + 1) * r` for r in [0, 1), kept inside [min, max] when rounding
/// of huge ranges would step outside.
fn scaled(min: i64, max: i64, r: f64) -> i64 {
    let span = max.wrapping_sub(min).wrapping_add(1) as f64;
    min.saturating_add((span * r) as i64).min(max)
}

pub fn hash_fnv1a(val: i64, seed: i64) -> i64 {
    let mut result = FNV_OFFSET_BASIS ^ seed as u64;
    let mut v = val;
    for _ in 0..8 {
        let octet = (v & 0xff) as u64;
        v >>= 8;
        result ^= octet;
        result = result.wrapping_mul(FNV_PRIME);
    }
    result as i64
}

pub fn hash_murmur2(val: i64, seed: i64) -> i64 {
    let mut result = seed as u64 ^ MM2_MUL_TIMES_8;
    let mut k = val as u64;
    k = k.wrapping_mul(MM2_MUL);
    k ^= k >> MM2_ROT;
    k = k.wrapping_mul(MM2_MUL);
    result ^= k;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result = result.wrapping_mul(MM2_MUL);
    result ^= result >> MM2_ROT;
    result as i64
}

/// pgbench's `permute(val, size, seed)`: a pseudorandom bijection of `[0, size)`.
pub fn permute(val: i64, isize: i64, seed: i64) -> i64 {
    if isize < 2 {
        return 0;
    }
    let mut st = PgPrng::seed(seed as u64);
    let size = isize as u64;
    let mut v = (val as u64) % size;
    let masklen = 63 - size.leading_zeros();
    let mask = (1u64 << masklen) - 1;
    let rot = |x: u64| ((x << 1) & mask) | (x >> (masklen - 1));
    for _ in 0..6 {
        let m = (st.next_u64() & mask) | 1;
        let r = st.next_u64() & mask;
        if v <= mask {
            v = (v.wrapping_mul(m) ^ r) & mask;
            v = rot(v);
        }
        let m = (st.next_u64() & mask) | 1;
        let r = st.next_u64() & mask;
        let mut t = size - 1 - v;
        if t <= mask {
            t = (t.wrapping_mul(m) ^ r) & mask;
            t = rot(t);
            v = size - 1 - t;
        }
        let r = st.u64_range(0, size - 1);
        v = ((v as u128 + r as u128) % size as u128) as u64;
    }
    v as i64
}

#[cfg(test)]
mod tests;
