//! The deterministic row generator of the four AS3AP tables (see the module comment of
//! `as3ap` for the distributions). Every permuted column takes its rank from a keyed
//! Feistel permutation of the row number, so rows are produced in any order and in
//! constant memory, and the same row count always gives the same data.

use std::io::Write;

use blocklab_script::prng::PgPrng;
use blocklab_script::prng::splitmix64_mix as mix;

const BILLION: i64 = 1_000_000_000;
/// Days from 1900-01-01 covered by `col_date` (AS3AP: 1/1/1900 to about 12/2000).
const DATE_DAYS: u64 = 36_860;
/// Standard deviation of the normally distributed `col_double` (AS3APgen's observation).
const DOUBLE_SIGMA: f64 = 241_700_000.0;
const BASE36: &[u8; 36] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

pub const CODE_1: &str = "BENCHMARKS";
pub const NAME_1: &str = "THE+ASAP+BENCHMARKS+";
pub const ADDRESS_1: &str = "SILICON VALLEY";

/// The four tables with AS3AP's ten columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Uniques,
    Hundred,
    Tenpct,
    Updates,
}

impl Table {
    pub const ALL: [Table; 4] = [
        Table::Uniques,
        Table::Hundred,
        Table::Tenpct,
        Table::Updates,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Table::Uniques => "uniques",
            Table::Hundred => "hundred",
            Table::Tenpct => "tenpct",
            Table::Updates => "updates",
        }
    }

    fn id(self) -> u64 {
        match self {
            Table::Uniques => 1,
            Table::Hundred => 2,
            Table::Tenpct => 3,
            Table::Updates => 4,
        }
    }
}

fn hash(seed: u64, i: u64) -> u64 {
    mix(seed ^ mix(i.wrapping_add(0x9E37_79B9_7F4A_7C15)))
}

/// A keyed pseudo-random bijection of `[0, n)`: a 4-round balanced Feistel network on the
/// smallest even bit width holding `n`, with cycle walking.
#[derive(Clone, Debug)]
pub struct Perm {
    n: u64,
    half: u32,
    mask: u64,
    keys: [u64; 4],
}

impl Perm {
    pub fn new(n: u64, seed: u64) -> Perm {
        let bits = 64 - n.saturating_sub(1).max(1).leading_zeros();
        let half = bits.div_ceil(2);
        let mut rng = PgPrng::seed(seed);
        Perm {
            n,
            half,
            mask: (1u64 << half) - 1,
            keys: std::array::from_fn(|_| rng.next_u64()),
        }
    }

    pub fn at(&self, i: u64) -> u64 {
        let mut x = i;
        loop {
            let mut l = x >> self.half;
            let mut r = x & self.mask;
            for k in self.keys {
                let f = mix(r ^ k) & self.mask;
                (l, r) = (r, l ^ f);
            }
            x = (l << self.half) | r;
            if x < self.n {
                return x;
            }
        }
    }
}

/// A unique string of `len` base-36 characters for rank `r`: one leading digit from a
/// hash, `unique` digits of an affine bijection of the rank, then hashed filler. It
/// never starts with a letter, so it cannot equal the AS3AP marker values.
fn unique_text(out: &mut Vec<u8>, r: u64, seed: u64, len: usize, unique: u32) {
    let modulus = 36u128.pow(unique);
    let mul = u128::from(mix(seed) | 1) % modulus;
    // Coprime with 36: odd and not a multiple of 3.
    let mul = if mul.is_multiple_of(3) { mul + 2 } else { mul };
    let add = u128::from(mix(seed ^ 0xadd)) % modulus;
    let mut v = (u128::from(r) * mul + add) % modulus;
    let h = hash(seed, r);
    out.push(BASE36[(h % 10) as usize]);
    let start = out.len();
    for _ in 0..unique {
        out.push(BASE36[(v % 36) as usize]);
        v /= 36;
    }
    out[start..].reverse();
    let mut f = mix(h);
    for _ in 0..len - 1 - unique as usize {
        out.push(BASE36[(f % 36) as usize]);
        f = mix(f);
    }
}

fn code(out: &mut Vec<u8>, r: u64, seed: u64) {
    if r == 0 {
        out.extend_from_slice(CODE_1.as_bytes());
    } else {
        unique_text(out, r, seed, 10, 9);
    }
}

fn name(out: &mut Vec<u8>, r: u64, seed: u64) {
    if r == 0 {
        out.extend_from_slice(NAME_1.as_bytes());
    } else {
        unique_text(out, r, seed, 20, 12);
    }
}

/// Cumulative Poisson(18) probabilities for the address lengths `2 + k`.
fn poisson_cdf() -> [f64; 79] {
    let mut cdf = [0.0; 79];
    let mut p = (-18.0f64).exp();
    let mut acc = 0.0;
    for (k, c) in cdf.iter_mut().enumerate() {
        if k > 0 {
            p *= 18.0 / k as f64;
        }
        acc += p;
        *c = acc;
    }
    cdf
}

/// Address number `idx` of a table: 2 to 80 characters, length 2 + Poisson(18).
fn address(out: &mut Vec<u8>, idx: u64, seed: u64, cdf: &[f64; 79], silicon: bool) {
    if silicon && idx == 0 {
        out.extend_from_slice(ADDRESS_1.as_bytes());
        return;
    }
    let mut rng = PgPrng::seed(hash(seed, idx));
    let u = rng.double();
    let k = cdf.iter().position(|&c| u < c).unwrap_or(cdf.len());
    for _ in 0..(2 + k).min(80) {
        out.push(BASE36[(rng.next_u64() % 36) as usize]);
    }
}

/// `YYYY-MM-DD` of `days` after 1900-01-01 (proleptic Gregorian).
fn date(out: &mut Vec<u8>, days: u64) -> std::io::Result<()> {
    // Howard Hinnant's civil_from_days, from 1970-01-01 (1900-01-01 is day -25567).
    let z = days as i64 - 25_567 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    write!(out, "{y:04}-{m:02}-{d:02}")
}

/// Normal(0, sigma) from two hashed uniforms (Box-Muller), kept within +-10^9.
fn normal(seed: u64, i: u64) -> f64 {
    let mut rng = PgPrng::seed(hash(seed, i));
    let u1 = 1.0 - rng.double();
    let u2 = rng.double();
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (z * DOUBLE_SIGMA).clamp(-1e9, 1e9)
}

/// The generator of one table of `n` rows.
pub struct TableGen {
    table: Table,
    n: u64,
    seed: u64,
    perms: [Perm; 8],
    zipf_cum: [u64; 10],
    cdf: [f64; 79],
    hundred_float: Perm,
    hundred_double: Perm,
}

// Column slots of `perms`.
const KEY: usize = 0;
const INT: usize = 1;
const SIGNED: usize = 2;
const FLOAT: usize = 3;
const DOUBLE: usize = 4;
const DECIM: usize = 5;
const CODE: usize = 6;
const TEXT: usize = 7;

impl TableGen {
    pub fn new(table: Table, n: u64) -> TableGen {
        let seed = mix(0xA53A_9000 ^ (table.id() << 40));
        let perms = std::array::from_fn(|c| Perm::new(n, seed ^ ((c as u64 + 1) << 8)));
        // Zipf-like float: value j (1..=10) with frequency proportional to 1/j^2; AS3APgen
        // normalizes by its approximation of H(2), the rest goes to the first value.
        let z = 2.0f64;
        let hz = z.ln()
            + 0.577_215_664_9
            + 1.0 / (2.0 * z)
            + 1.0 / (12.0 * z * z)
            + 1.0 / (120.0 * z.powi(4));
        let mut zipf_cum = [0u64; 10];
        let mut acc = 0u64;
        for (j, c) in zipf_cum.iter_mut().enumerate() {
            let f = 1.0 / hz / ((j + 1) as f64).powi(2);
            acc += (f * n as f64) as u64;
            *c = acc;
        }
        let spare = n.saturating_sub(acc);
        for c in &mut zipf_cum {
            *c += spare;
        }
        TableGen {
            table,
            n,
            seed,
            perms,
            zipf_cum,
            cdf: poisson_cdf(),
            hundred_float: Perm::new(100, seed ^ 0xf10a7),
            hundred_double: Perm::new(100, seed ^ 0xd0b1e),
        }
    }

    fn rank(&self, col: usize, i: u64) -> i64 {
        self.perms[col].at(i) as i64
    }

    fn sparse_key(&self, i: u64) -> i64 {
        1000 + self.rank(KEY, i) * (BILLION / self.n as i64)
    }

    fn dense_key(&self, i: u64) -> i64 {
        match self.rank(KEY, i) {
            1 => self.n as i64,
            r => r,
        }
    }

    fn signed_sparse(&self, i: u64) -> i64 {
        self.rank(SIGNED, i) * (BILLION / self.n as i64) - BILLION / 2
    }

    fn decim_sparse(&self, i: u64) -> i64 {
        self.rank(DECIM, i) * (2 * BILLION / self.n as i64) - BILLION
    }

    fn float_zipf(&self, i: u64) -> i64 {
        let r = self.perms[FLOAT].at(i);
        let j = self.zipf_cum.iter().position(|&c| r < c).unwrap_or(9) as i64;
        -BILLION / 2 + j * (BILLION / 9)
    }

    /// Appends row `i` (0-based) as a COPY text line.
    pub fn row(&self, i: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
        let n = self.n as i64;
        let (key, int, signed, float, double, decim): (i64, i64, i64, i64, f64, i64);
        match self.table {
            Table::Uniques | Table::Updates => {
                key = if self.table == Table::Uniques {
                    self.sparse_key(i)
                } else {
                    self.dense_key(i)
                };
                int = key;
                signed = self.signed_sparse(i);
                float = self.float_zipf(i);
                double = normal(self.seed ^ 0xd0, i);
                decim = self.decim_sparse(i);
            }
            Table::Hundred => {
                key = self.dense_key(i);
                int = self.rank(INT, i) * (BILLION / n);
                let k = self.rank(SIGNED, i) % 100;
                signed = 100 + k;
                float = self.hundred_float.at(k as u64) as i64 * 10_000_000 - BILLION / 2;
                let d = self.hundred_double.at(k as u64) as i64 * 20_000_000 - BILLION;
                double = d as f64;
                decim = d;
            }
            Table::Tenpct => {
                key = self.sparse_key(i);
                int = key;
                signed = self.signed_sparse(i);
                float = self.float_zipf(i);
                let m = (n / 10).max(1);
                let d = (self.rank(DOUBLE, i) % m + 1) * (2 * BILLION / m) - BILLION;
                double = d as f64;
                decim = d;
            }
        }
        write!(
            out,
            "{key}\t{int}\t{signed}\t{float}\t{double:.2}\t{decim}\t"
        )?;
        date(out, hash(self.seed ^ 0xda7e, i) % DATE_DAYS)?;
        out.push(b'\t');
        code(out, self.perms[CODE].at(i), self.seed ^ 0xc0de);
        out.push(b'\t');
        let text = self.perms[TEXT].at(i);
        match self.table {
            Table::Uniques | Table::Updates => {
                name(out, text, self.seed ^ 0x4a3e);
                out.push(b'\t');
                let a = self.perms[INT].at(i);
                // About 80% distinct: ranks 1..n share addresses four in five.
                let idx = if a == 0 { 0 } else { 1 + (a - 1) * 4 / 5 };
                address(out, idx, self.seed ^ 0xadd7, &self.cdf, true);
            }
            Table::Hundred => {
                let k = (signed - 100) as u64;
                name(out, k, self.seed ^ 0x4a3e);
                out.push(b'\t');
                address(out, k, self.seed ^ 0xadd7, &self.cdf, true);
            }
            Table::Tenpct => {
                name(out, text * 10 / self.n, self.seed ^ 0x4a3e);
                out.push(b'\t');
                let a = self.perms[INT].at(i) / 10;
                address(out, a + 1, self.seed ^ 0xadd7, &self.cdf, false);
            }
        }
        out.push(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn perm_is_a_bijection() {
        for n in [1u64, 2, 3, 100, 1000, 1001, 4097] {
            let p = Perm::new(n, 42);
            let seen: HashSet<u64> = (0..n).map(|i| p.at(i)).collect();
            assert_eq!(seen.len() as u64, n);
            assert!(seen.iter().all(|&v| v < n));
        }
    }

    #[test]
    fn dates_are_iso() {
        let mut out = Vec::new();
        date(&mut out, 0).unwrap();
        date(&mut out, 36_859).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "1900-01-012000-12-01");
    }

    #[test]
    fn codes_are_unique_and_sized() {
        let mut seen = HashSet::new();
        for r in 0..5000 {
            let mut c = Vec::new();
            code(&mut c, r, 7);
            assert_eq!(c.len(), 10);
            assert!(seen.insert(c));
            let mut nm = Vec::new();
            name(&mut nm, r, 7);
            assert_eq!(nm.len(), 20);
        }
    }
}
