//! The TPC-C cardinalities, the validated parameters of a run, and the steps.

use blocklab_spec::WorkloadStep;

use crate::error::WorkerError;

/// The TPC-C cardinalities (clause 1.2).
pub const DISTRICTS: i32 = 10;
pub const CUSTOMERS_PER_DISTRICT: i32 = 3000;
pub const ORDERS_PER_DISTRICT: i32 = 3000;
pub const ITEMS: i32 = 100_000;

/// The TPC-C parameters of a task, validated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TpccOptions {
    pub warehouses: u32,
    pub keying_thinking: bool,
    /// Multiplies keying and thinking times; 0 or unset means 1.0.
    pub time_scale: f64,
}

impl TpccOptions {
    /// Validates the parameters (`time_scale` 0 means 1.0).
    pub fn new(
        warehouses: u32,
        keying_thinking: bool,
        time_scale: f64,
    ) -> Result<TpccOptions, WorkerError> {
        if warehouses == 0 || warehouses > 100_000 {
            return Err(WorkerError::InvalidArgument(format!(
                "tpcc warehouses must be between 1 and 100000 (got {warehouses})"
            )));
        }
        if !time_scale.is_finite() || time_scale < 0.0 {
            return Err(WorkerError::InvalidArgument(format!(
                "tpcc time_scale must be a non-negative number (got {time_scale})"
            )));
        }
        Ok(TpccOptions {
            warehouses,
            keying_thinking,
            time_scale: if time_scale == 0.0 { 1.0 } else { time_scale },
        })
    }
}

/// A step outside the measured window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpccStep {
    /// Drop, create, load item (one worker).
    Schema,
    /// This worker's warehouses.
    Load,
    /// Keys, DBT-2's indexes, VACUUM ANALYZE.
    Finish,
    /// The consistency conditions.
    Check,
}

impl TpccStep {
    pub fn name(self) -> &'static str {
        match self {
            TpccStep::Schema => "schema",
            TpccStep::Load => "load",
            TpccStep::Finish => "finish",
            TpccStep::Check => "check",
        }
    }
}

impl TryFrom<WorkloadStep> for TpccStep {
    type Error = WorkerError;

    fn try_from(s: WorkloadStep) -> Result<TpccStep, WorkerError> {
        match s {
            WorkloadStep::Schema => Ok(TpccStep::Schema),
            WorkloadStep::Load => Ok(TpccStep::Load),
            WorkloadStep::Finish => Ok(TpccStep::Finish),
            WorkloadStep::Check => Ok(TpccStep::Check),
            other => Err(WorkerError::InvalidArgument(format!(
                "workload_step.step {other} is not a tpcc step; allowed: schema, load, finish, check"
            ))),
        }
    }
}

/// The warehouses part `part` of `parts` loads (parts 0 means 1).
pub fn warehouses_of_part(warehouses: u32, part: u32, parts: u32) -> Vec<i32> {
    let parts = parts.max(1);
    (1..=warehouses)
        .filter(|w| (w - 1) % parts == part)
        .filter_map(|w| i32::try_from(w).ok())
        .collect()
}
