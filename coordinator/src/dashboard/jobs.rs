//! The job list's live lines: each job's state and progress, and its headline comparison
//! ([`blocklab_report::headline`]), served as `/jobs.json` for the index page's script, which
//! updates the rows in place while something runs (no page reload).
//!
//! A headline needs the job's results; a finished job's never change, so it is computed once
//! and kept. Only the [`HEADLINES`] newest jobs get one, so the index stays fast over a long
//! catalog.

use std::collections::HashMap;
use std::sync::Mutex;

use serde::Serialize;

use crate::catalog::{Catalog, JobRecord};

/// How many of the newest jobs the list shows a headline for.
pub const HEADLINES: usize = 50;

/// One row of the job list as the script reads it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobLine {
    pub job_id: String,
    pub state: String,
    pub finished: bool,
    /// "done / total / failed" runs.
    pub runs: String,
    /// Why it waits, and the build it is making, when it does.
    pub waiting: String,
    pub build: String,
    pub headline: String,
}

/// Finished jobs' headlines, by job id.
#[derive(Debug, Default)]
pub struct Headlines {
    done: Mutex<HashMap<String, String>>,
}

impl Headlines {
    /// The headline of `job`: kept when finished, else computed now; empty when its results
    /// cannot be read (the reason is logged).
    pub async fn of(&self, catalog: &Catalog, job: &JobRecord) -> String {
        let finished = job.state.is_finished();
        if finished && let Some(h) = self.lock().get(&job.job_id) {
            return h.clone();
        }
        let line = match crate::results::query_results(catalog, "", &job.job_id, "").await {
            Ok(r) => blocklab_report::headline::headline(&r.cells),
            Err(e) => {
                tracing::warn!(job_id = %job.job_id, error = %e, "dashboard: no headline for the job");
                return String::new();
            }
        };
        if finished {
            self.lock().insert(job.job_id.clone(), line.clone());
        }
        line
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.done.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lines of `jobs` (newest first, as the catalog lists them).
    pub async fn lines(&self, catalog: &Catalog, jobs: &[JobRecord]) -> Vec<JobLine> {
        let mut out = Vec::with_capacity(jobs.len());
        for (i, j) in jobs.iter().enumerate() {
            let headline = if i < HEADLINES {
                self.of(catalog, j).await
            } else {
                String::new()
            };
            out.push(JobLine {
                job_id: j.job_id.clone(),
                state: j.state.as_str().to_string(),
                finished: j.state.is_finished(),
                runs: format!("{} / {} / {}", j.runs_done, j.runs_total, j.runs_failed),
                waiting: j.waiting.clone().unwrap_or_default(),
                build: j
                    .build_progress
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
                headline,
            });
        }
        out
    }
}

/// The index page's script: while a job is unfinished, it reads `/jobs.json` every 3 s and
/// writes each row's state, progress and headline as text (never as HTML); a job the page
/// does not list yet reloads the page.
pub const SCRIPT: &str = r#"<script>
(function () {
  function set(row, cls, text) {
    var el = row.querySelector("." + cls);
    if (el && el.textContent !== text) { el.textContent = text; }
  }
  async function tick() {
    var again = true;
    try {
      var r = await fetch("/jobs.json", { credentials: "same-origin", cache: "no-store" });
      if (r.ok) {
        var jobs = await r.json();
        for (var j of jobs) {
          var row = document.querySelector('tr[data-job="' + j.job_id + '"]');
          if (!row) { location.reload(); return; }
          row.dataset.state = j.state;
          set(row, "state-name", j.state);
          set(row, "waiting", j.waiting);
          set(row, "build-progress", j.build);
          set(row, "runs", j.runs);
          set(row, "headline", j.headline);
        }
        again = jobs.some(function (j) { return !j.finished; });
      }
    } catch (e) { /* the coordinator restarts: try again */ }
    if (again) { setTimeout(tick, 3000); }
  }
  setTimeout(tick, 3000);
})();
</script>"#;
