//! The spec fuzz target's body, shared by `fuzz/` (cargo-fuzz) and a plain unit test: any
//! bytes as spec text. Parsing must not panic; a spec that parses must parse again to the
//! same plan (one parse per submission on each side must agree), and its stored form must
//! read back equal.

use crate::{Files, JobPlan};

/// The seed a shuffled order gets here (a parse with a seed is deterministic).
const SEED: u64 = 42;

pub fn fuzz_spec(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let files = Files::new();
    match JobPlan::parse_with(&text, Some(SEED), &files) {
        Ok(plan) => {
            let stored = plan.to_json();
            let again = JobPlan::parse_with(&text, Some(SEED), &files)
                .expect("a spec that parsed once parses again");
            assert_eq!(again.to_json(), stored, "two parses of one spec differ");
            let back = JobPlan::from_json(&stored).expect("a stored plan reads back");
            assert_eq!(
                back.to_json(),
                stored,
                "the stored plan reads back different"
            );
            let (cells, runs) = plan.size();
            assert!(cells > 0 && runs > 0, "a valid spec with nothing to run");
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fuzz_spec;
    use blocklab_script::prng::PgPrng;

    /// Fragments a mutation inserts: keys, values and TOML syntax the spec knows.
    const PIECES: &[&str] = &[
        "\n",
        "=",
        "[",
        "]",
        "{",
        "}",
        ",",
        "\"",
        "'",
        "#",
        ".",
        "-1",
        "0",
        "1",
        "3",
        "16",
        "64",
        "1e400",
        "9223372036854775808",
        "true",
        "\"\"",
        "\"1s\"",
        "\"64MB' ; x\"",
        "[matrix]\n",
        "[settings]\n",
        "[workload]\n",
        "[layout]\n",
        "[placement]\n",
        "[source]\n",
        "[sources.a]\n",
        "[settings_variants.v]\n",
        "[workload_variants.w]\n",
        "[workload.init]\n",
        "[workload.variables]\n",
        "block_size_kb = ",
        "wal_block_size_kb = ",
        "clients = ",
        "segsize_gb = ",
        "wal_segsize_mb = ",
        "repetitions = ",
        "{ min = 3, max = 2, target_ci_pct = 0 }",
        "order = \"shuffled\"",
        "seed = ",
        "baseline = { block_size_kb = 8 }",
        "kind = \"tpcc\"",
        "kind = \"probe\"",
        "kind = \"as3ap\"",
        "kind = \"maintenance\"",
        "builtin = \"select-only\"",
        "scripts = [{ builtin = \"tpcb-like\", weight = 0 }]",
        "duration = ",
        "warmup = ",
        "transactions = ",
        "rate = ",
        "shared_buffers = ",
        "memory_policy = \"convert\"",
        "vary = \"all\"",
        "replicate_baseline = true",
        "configure = [\"--x=\\n\"]",
        "tarball = \"/a/../b\"",
        "git = \"ext::x\"",
        "ref = \"-x\"",
        "url = \"http://x\"",
        "sha256 = \"00\"",
        "equivalence_pct = ",
        "suspect_runs = \"exclude\"",
    ];

    fn seeds() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/specs");
        let mut out: Vec<String> = std::fs::read_dir(&dir)
            .expect("deploy/specs")
            .filter_map(|e| e.ok())
            .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
            .map(|e| std::fs::read_to_string(e.path()).expect("seed spec"))
            .collect();
        out.sort();
        assert!(out.len() >= 4, "seed corpus: {}", dir.display());
        out
    }

    fn pick<'a, T>(rng: &mut PgPrng, items: &'a [T]) -> &'a T {
        &items[rng.u64_range(0, items.len() as u64 - 1) as usize]
    }

    /// One mutation of `text`: insert a fragment, delete a span, duplicate a line, splice
    /// another seed's line in, or flip a byte.
    fn mutate(rng: &mut PgPrng, text: &str, seeds: &[String]) -> Vec<u8> {
        let mut bytes = text.as_bytes().to_vec();
        for _ in 0..rng.u64_range(1, 4) {
            let at = rng.u64_range(0, bytes.len() as u64) as usize;
            match rng.u64_range(0, 4) {
                0 => {
                    let piece = pick(rng, PIECES).as_bytes();
                    bytes.splice(at..at, piece.iter().copied());
                }
                1 => {
                    let end = (at + rng.u64_range(1, 40) as usize).min(bytes.len());
                    bytes.drain(at..end);
                }
                2 | 3 => {
                    let other = pick(rng, seeds);
                    let lines: Vec<&str> = other.lines().collect();
                    let line = format!("{}\n", pick(rng, &lines));
                    bytes.splice(at..at, line.bytes());
                }
                _ => {
                    if let Some(b) = bytes.get_mut(at) {
                        *b ^= 1 << rng.u64_range(0, 7);
                    }
                }
            }
        }
        bytes
    }

    #[test]
    fn seed_specs_parse_and_mutations_never_panic() {
        let seeds = seeds();
        for s in &seeds {
            fuzz_spec(s.as_bytes());
            assert!(
                crate::JobPlan::parse(s, Some(1)).is_ok(),
                "a seed spec must be valid:\n{s}"
            );
        }
        let mut rng = PgPrng::seed(17);
        let iterations = std::env::var("BLOCKLAB_FUZZ_ITERATIONS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3_000u32);
        let mut accepted = 0;
        for _ in 0..iterations {
            let seed = pick(&mut rng, &seeds).clone();
            let input = mutate(&mut rng, &seed, &seeds);
            if crate::JobPlan::parse(&String::from_utf8_lossy(&input), Some(1)).is_ok() {
                accepted += 1;
            }
            fuzz_spec(&input);
            let noise: Vec<u8> = (0..rng.u64_range(0, 64))
                .map(|_| rng.next_u64() as u8)
                .collect();
            fuzz_spec(&noise);
        }
        // The mutations reach past the parser's first error often enough to matter.
        assert!(accepted > iterations / 20, "only {accepted} mutants parsed");
    }
}
