//! The `blocklab` command-line client: argument parsing lives in the binary; the commands
//! and their output formatting live here so tests can drive them.
//!
//! `plan` (`submit --dry-run`), `listing` (jobs, hosts, builds), `detail` (a job and its
//! runs, one run), `probe` (I/O probe results) and `watch` (plain lines). The
//! connection and the error type come from the `client` module, shared with `progress`.

use std::path::Path;

use blocklab_spec::JobSpec;

mod detail;
mod listing;
mod plan;
mod probe;
mod table;
mod watch;

pub use crate::client::{CliError, Client, Transport, connect};
pub use crate::runs::{run_result, run_state};
pub use blocklab_report::render::{Format, render_compare, render_results};
pub use detail::{RUN_KEY_COLUMNS, render_job, render_run_detail, runs_table_header};
pub use listing::{
    builds_table, hosts_table, jobs_table, render_builds, render_host_facts, render_hosts,
    render_jobs,
};
pub use plan::{render_job_plan, render_plan};
pub use probe::{probe_job, probe_results_if_probe, render_probe};
pub use watch::watch;

/// Reads and validates a spec file of either kind; nothing is sent anywhere.
pub fn load_spec(path: &Path) -> Result<(String, JobSpec), CliError> {
    let text = std::fs::read_to_string(path).map_err(|error| CliError::Read {
        path: path.display().to_string(),
        error,
    })?;
    let spec = JobSpec::parse(&text).map_err(|error| CliError::Spec {
        path: path.display().to_string(),
        error,
    })?;
    Ok((text, spec))
}
