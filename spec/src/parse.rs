//! Spec text to a validated spec of either kind.

use crate::error::SpecError;
use crate::model::ProbeSpec;
use crate::model::{JobSpec, RunOrder, Spec};
use crate::probe::spec_kind;
use crate::state::JobKind;
use crate::validate;

impl JobSpec {
    /// Parses spec text of either kind (the `kind` key, default benchmark).
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        Self::parse_with_seed(text, None)
    }

    pub fn parse_with_seed(text: &str, seed: Option<u64>) -> Result<Self, SpecError> {
        match spec_kind(text)? {
            JobKind::Probe => Ok(JobSpec::Probe(ProbeSpec::parse(text)?)),
            JobKind::Benchmark => Ok(JobSpec::Benchmark(Box::new(Spec::parse_with_seed(
                text, seed,
            )?))),
        }
    }
}

impl Spec {
    /// Parses and validates spec text. Unknown keys, wrong types and disallowed values
    /// are refused with the field named.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        validate::parse(text)
    }

    /// Like `parse`, but a seeded order (shuffled, randomized-block) without a seed in the text uses `seed` (the one
    /// recorded when the job was stored).
    pub fn parse_with_seed(text: &str, seed: Option<u64>) -> Result<Self, SpecError> {
        let mut spec = validate::parse(text)?;
        match (spec.order, seed) {
            (RunOrder::Shuffled { .. }, Some(s)) => spec.order = RunOrder::Shuffled { seed: s },
            (RunOrder::RandomizedBlock { .. }, Some(s)) => {
                spec.order = RunOrder::RandomizedBlock { seed: s }
            }
            _ => {}
        }
        Ok(spec)
    }
}
