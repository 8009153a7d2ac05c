//! The `blocklab` command-line client: argument parsing lives in the binary; the commands
//! and their output formatting live here so tests can drive them.
//!
//! `plan` (`submit --dry-run`), `listing` (jobs, hosts, builds), `detail` (a job and its
//! runs, one run), `probe` (I/O probe results), `export` (a job's export), `ids` (job ids
//! and their prefixes) and `watch` (plain lines, or the bar of `progress`). The connection
//! and the error type come from the `client` module, shared with `progress`.

use std::path::Path;

use blocklab_spec::{Files, JobSpec, referenced_files};

mod bisect;
mod commits;
mod detail;
mod export;
mod history;
mod ids;
mod job_table;
mod listing;
mod plan;
mod probe;
mod table;
mod watch;

pub use crate::client::{CliError, Client, Transport, answer, connect};
pub use crate::runs::{run_result, run_state};
pub use bisect::{Bisection, Found, Step, bisect, render_bisection};
pub use blocklab_report::render::{
    Format, View, render_compare, render_compare_view, render_results, render_results_view,
};
pub use commits::{point_name, resolve_commits};
pub use detail::{
    RUN_KEY_COLUMNS, render_job, render_job_fit, render_run_detail, runs_table_header, show_job,
};
pub use export::{export_json, job_export};
pub use history::{earlier_like, render_history};
pub use ids::{MIN_PREFIX, match_prefix, resolve_job_id, resolve_job_ids};
pub use listing::{
    builds_table, hosts_table, jobs_table, render_builds, render_host_facts, render_hosts,
    render_jobs,
};
pub use plan::{render_job_plan, render_plan};
pub use probe::{probe_job, probe_results_if_probe, render_probe};
pub use watch::{Watched, watch, watch_job};

/// A spec as read for submission: its text, the files it names (read relative to the spec
/// file's directory, keyed by the path as the spec writes it) and the validated spec.
pub struct LoadedSpec {
    pub text: String,
    pub files: Files,
    pub spec: JobSpec,
}

/// Reads and validates a spec file of either kind, with the script and init SQL files it
/// names; nothing is sent anywhere.
pub fn load_spec(path: &Path) -> Result<LoadedSpec, CliError> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|error| CliError::Read {
            path: p.display().to_string(),
            error,
        })
    };
    let text = read(path)?;
    let text = resolve_commits(&path.display().to_string(), &text)?.unwrap_or(text);
    let spec_error = |error| CliError::Spec {
        path: path.display().to_string(),
        error,
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut files = Files::new();
    for name in referenced_files(&text).map_err(spec_error)? {
        let file = dir.join(&name);
        files.insert(name, read(&file)?);
    }
    let spec = JobSpec::parse_with(&text, None, &files).map_err(spec_error)?;
    Ok(LoadedSpec { text, files, spec })
}
