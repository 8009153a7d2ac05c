//! A job as its listings show it, with the progress of the build it is making.

use serde::Serialize;

/// A job as its listings show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JobSummary {
    pub job_id: String,
    pub name: String,
    pub state: String,
    pub created_at: String,
    pub runs_total: u32,
    pub runs_done: u32,
    pub runs_failed: u32,
    pub db_host_id: String,
    pub error: String,
    /// benchmark | probe
    pub kind: String,
    /// What it runs: pgbench | tpcc | as3ap | maintenance | probe.
    pub workload: String,
    /// The metric its results show when none is asked for, stored at submit.
    pub headline_metric: String,
    /// Why the job waits right now; empty while it does not wait.
    pub waiting: String,
    /// The latest progress of the build the job is making now.
    pub build: Option<BuildProgress>,
    /// The job this one reruns; empty for a job submitted as such.
    pub rerun_of: String,
}

/// The progress of one build.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BuildProgress {
    pub block_size_kb: u32,
    pub wal_block_size_kb: u32,
    /// fetch | configure | make | install
    pub step: String,
    /// During make: 0..100.
    pub percent: Option<f64>,
    /// The object count behind percent is an estimate.
    pub estimated: bool,
    pub eta_seconds: Option<u32>,
}
