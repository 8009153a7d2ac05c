//! What a maintenance task asks for (the steps, checked) and what it reports, plus the names
//! the steps share (databases, table, files in the run directory).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::cluster::{ResetDone, ResetPlan};
use crate::error::AgentError;

pub const MAINT_DB: &str = "blocklab_maint";
pub const RESTORE_DB: &str = "blocklab_restore";
/// The table, schema-qualified: the agent's sessions search only `pg_catalog`.
pub(crate) const TABLE: &str = "public.maint_accounts";
/// Its secondary index (created in the table's schema).
pub(crate) const BID_INDEX: &str = "maint_accounts_bid_idx";
pub(crate) const ROWS_PER_SCALE: u64 = 100_000;
pub const MAX_SCALE: u32 = 10_000;
pub(crate) const DUMP_FILE: &str = "maint.dump";
pub(crate) const PASS_FILE: &str = "maint.pgpass";

/// One maintenance step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    Copy,
    CreateIndex,
    VacuumAnalyze,
    Checkpoint,
    CountWarm,
    CountCold,
    Dump,
    Restore,
}

impl Step {
    /// The steps, in the order an empty step list runs them.
    pub const ALL: [Step; 8] = [
        Step::Copy,
        Step::CreateIndex,
        Step::VacuumAnalyze,
        Step::Checkpoint,
        Step::CountWarm,
        Step::CountCold,
        Step::Dump,
        Step::Restore,
    ];

    /// The step's name on the wire and in specs (`create-index`).
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Copy => "copy",
            Step::CreateIndex => "create-index",
            Step::VacuumAnalyze => "vacuum-analyze",
            Step::Checkpoint => "checkpoint",
            Step::CountWarm => "count-warm",
            Step::CountCold => "count-cold",
            Step::Dump => "dump",
            Step::Restore => "restore",
        }
    }

    /// The metric the step's seconds go into (`maint.create_index`).
    pub fn metric(self) -> String {
        format!("maint.{}", self.as_str().replace('-', "_"))
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Step {
    type Err = AgentError;

    /// A step name; the error names it and the allowed ones.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Step::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                let allowed: Vec<&str> = Step::ALL.iter().map(|k| k.as_str()).collect();
                AgentError::invalid(
                    "steps",
                    format!("unknown step {s:?}; allowed: {}", allowed.join(", ")),
                )
            })
    }
}

/// A checked maintenance task: the scale and the steps to run, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaintPlan {
    scale: u32,
    steps: Vec<Step>,
    reset: ResetPlan,
}

impl MaintPlan {
    /// The cache reset after the table is loaded (layout `cold` / `drop_os_cache`).
    pub fn with_reset(mut self, reset: ResetPlan) -> Self {
        self.reset = reset;
        self
    }

    pub fn reset(&self) -> ResetPlan {
        self.reset
    }

    pub fn scale(&self) -> u32 {
        self.scale
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Rows of the table at this scale.
    pub fn rows(&self) -> u64 {
        u64::from(self.scale) * ROWS_PER_SCALE
    }

    /// How long one step may take: generous, growing with the data.
    pub fn step_limit(&self) -> Duration {
        Duration::from_secs(600 + 6 * u64::from(self.scale))
    }
}

/// Checks a task: the scale first, then the steps in order (each one known, none twice).
/// No steps = all of them.
pub fn plan(
    scale: u32,
    steps: impl IntoIterator<Item = Result<Step, AgentError>>,
) -> Result<MaintPlan, AgentError> {
    if !(1..=MAX_SCALE).contains(&scale) {
        return Err(AgentError::invalid(
            "scale",
            format!("{scale} is not in 1..={MAX_SCALE}"),
        ));
    }
    let mut out: Vec<Step> = Vec::new();
    for s in steps {
        let s = s?;
        if out.contains(&s) {
            return Err(AgentError::invalid(
                "steps",
                format!("step {:?} is listed more than once", s.as_str()),
            ));
        }
        out.push(s);
    }
    if out.is_empty() {
        out = Step::ALL.to_vec();
    }
    Ok(MaintPlan {
        scale,
        steps: out,
        reset: ResetPlan::default(),
    })
}

/// One figure a maintenance task measured (lower is better for all of them).
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
}

/// What a maintenance task measured and noticed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MaintReport {
    pub metrics: Vec<Metric>,
    pub notes: Vec<String>,
    /// Whether `count-cold` could drop the OS page cache.
    pub os_cache_dropped: bool,
    /// What the reset after the load did (None: none asked for, or nothing was loaded).
    pub reset: Option<ResetDone>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_names_are_the_specs() {
        let names: Vec<&str> = Step::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, blocklab_spec::MAINTENANCE_STEPS);
        for s in Step::ALL {
            assert_eq!(s.as_str().parse::<Step>().unwrap(), s);
        }
        assert_eq!(Step::CreateIndex.metric(), "maint.create_index");
    }

    #[test]
    fn plans_are_checked() {
        let parse = |names: &[&str]| {
            let steps: Vec<String> = names.iter().map(|s| s.to_string()).collect();
            plan(
                1,
                steps.iter().map(|s| s.parse::<Step>()).collect::<Vec<_>>(),
            )
        };
        assert_eq!(parse(&[]).unwrap().steps(), Step::ALL);
        assert_eq!(
            parse(&["dump", "copy"]).unwrap().steps(),
            [Step::Dump, Step::Copy]
        );
        let e = parse(&["copy", "reindex"]).unwrap_err().to_string();
        assert!(e.contains("reindex") && e.contains("create-index"), "{e}");
        let e = parse(&["dump", "dump"]).unwrap_err().to_string();
        assert!(e.contains("more than once"), "{e}");
        assert!(plan(0, []).is_err());
        assert!(plan(MAX_SCALE + 1, []).is_err());
    }
}
