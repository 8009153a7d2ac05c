//! The experiment spec (TOML): parsing, strict validation with errors that name the field,
//! and expansion into cells (matrix points) and runs (cell x repetition) in run order.

mod baselines;
mod error;
mod files;
/// The spec fuzz target's body (`fuzz/`), built only with the `fuzzing` feature (and for
/// this crate's unit tests).
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod guc;
mod judging;
mod kind;
mod limits;
mod memory;
mod model;
mod order;
mod parse;
mod planning;
mod probe;
mod progress;
mod raw;
mod script;
pub mod state;
mod stored;
mod validate;

pub use error::SpecError;
pub use files::{named_files, referenced_files};
pub use guc::RESERVED_SETTINGS;
pub use kind::{AS3AP_MIXES, MAINTENANCE_STEPS};
pub use limits::*;
pub use memory::{
    MemoryPolicy, SLRU_BUFFERS, held_settings, hold_constant, is_page_unit, page_unit,
    setting_bytes,
};
pub use model::*;
pub use probe::{PROBE_CHUNKS_KB, parse_size, spec_kind};
pub use progress::BuildProgress;
pub use script::{
    DataInit, Files, PgbenchInit, PgbenchOptions, ScriptSource, UserFile, WeightedScript,
};
pub use state::{
    BuildStep, HostRole, JobKind, JobState, RunState, Stage, WorkloadName, WorkloadStep,
};
pub use stored::JobPlan;
pub use validate::series::{CommitPoints, Commits, spec_commits};
pub use validate::validate_configure_flag;

#[cfg(test)]
mod tests;
