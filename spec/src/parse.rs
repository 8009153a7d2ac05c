//! Spec text to a validated spec of either kind.

use crate::error::SpecError;
use crate::model::ProbeSpec;
use crate::model::{JobSpec, RunOrder, Spec};
use crate::probe::spec_kind;
use crate::script::Files;
use crate::state::JobKind;
use crate::validate;

impl JobSpec {
    /// Parses spec text of either kind (the `kind` key, default benchmark).
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        Self::parse_with_seed(text, None)
    }

    pub fn parse_with_seed(text: &str, seed: Option<u64>) -> Result<Self, SpecError> {
        Self::parse_with(text, seed, &Files::new())
    }

    /// Parses spec text with the files it names (scripts, init SQL) as sent beside it.
    pub fn parse_with(text: &str, seed: Option<u64>, files: &Files) -> Result<Self, SpecError> {
        match spec_kind(text)? {
            JobKind::Probe => {
                if let Some(name) = files.keys().next() {
                    return Err(SpecError::new(
                        "files",
                        format!("{name:?} was sent but a probe spec names no files"),
                    ));
                }
                Ok(JobSpec::Probe(ProbeSpec::parse(text)?))
            }
            JobKind::Benchmark => Ok(JobSpec::Benchmark(Box::new(Spec::parse_with(
                text, seed, files,
            )?))),
        }
    }
}

impl Spec {
    /// Parses and validates spec text. Unknown keys, wrong types and disallowed values
    /// are refused with the field named.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        validate::parse(text, &Files::new())
    }

    /// Like `parse`, but a seeded order (shuffled, randomized-block) without a seed in the text uses `seed` (the one
    /// recorded when the job was stored).
    pub fn parse_with_seed(text: &str, seed: Option<u64>) -> Result<Self, SpecError> {
        Self::parse_with(text, seed, &Files::new())
    }

    /// Like `parse_with_seed`, with the files the spec names as sent beside it.
    pub fn parse_with(text: &str, seed: Option<u64>, files: &Files) -> Result<Self, SpecError> {
        let mut spec = validate::parse(text, files)?;
        crate::files::check_files_used(&spec, files)?;
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
