//! xoshiro256** (Blackman, Vigna), seeded through [`splitmix64`]: the one generator the
//! TPC-C-like load and the report's calibration simulation draw from. Not pg_prng: pgbench's
//! own functions use [`super::PgPrng`].

use super::splitmix::splitmix64;

/// xoshiro256**'s state: four 64-bit words, filled by four steps of splitmix64 from a seed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    pub fn seed(seed: u64) -> Xoshiro256 {
        let mut x = seed;
        Xoshiro256 {
            s: std::array::from_fn(|_| splitmix64(&mut x)),
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `[0, 1)` from the top 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The expected values come from the algorithms' published reference code
    // (xoshiro256starstar.c, splitmix64.c), run independently of this crate.

    #[test]
    fn the_reference_stream_from_a_set_state() {
        let mut x = Xoshiro256 { s: [1, 2, 3, 4] };
        let got: Vec<u64> = (0..6).map(|_| x.next_u64()).collect();
        assert_eq!(
            got,
            [
                0x2d00,
                0,
                0x5a00_7080,
                0x10e0_0000_0000_9d80,
                0x10e0_b61c_e100_9d80,
                0x0870_021c_e143_ad00,
            ]
        );
    }

    #[test]
    fn the_reference_stream_from_a_seed() {
        let mut state = 0;
        let first: Vec<u64> = (0..4).map(|_| splitmix64(&mut state)).collect();
        assert_eq!(
            first,
            [
                0xe220_a839_7b1d_cdaf,
                0x6e78_9e6a_a1b9_65f4,
                0x06c4_5d18_8009_454f,
                0xf88b_b8a8_724c_81ec,
            ]
        );
        for (seed, expected) in [
            (
                0,
                [
                    0x99ec_5f36_cb75_f2b4,
                    0xbf6e_1f78_4956_452a,
                    0x1a5f_849d_4933_e6e0,
                    0x6aa5_94f1_262d_2d2c,
                ],
            ),
            (
                42,
                [
                    0x1578_0b2e_0c2e_c716,
                    0x6104_d986_6d11_3a7e,
                    0xae17_5332_39e4_99a1,
                    0xecb8_ad47_03b3_60a1,
                ],
            ),
        ] {
            let mut x = Xoshiro256::seed(seed);
            let got: Vec<u64> = (0..4).map(|_| x.next_u64()).collect();
            assert_eq!(got, expected, "seed {seed}");
        }
    }

    #[test]
    fn unit_takes_the_top_53_bits() {
        let mut a = Xoshiro256::seed(9);
        let mut b = a.clone();
        for _ in 0..1000 {
            let u = a.unit();
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u, (b.next_u64() >> 11) as f64 / (1u64 << 53) as f64);
        }
    }
}
