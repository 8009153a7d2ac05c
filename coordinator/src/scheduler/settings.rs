//! The settings check after the builds and before the first run: every build judges the
//! settings its cells give (its own GUC catalog and configuration parser, on the agent), so
//! a setting the build refuses fails the job at once, naming the spec field.

use std::collections::BTreeMap;
use std::time::Duration;

use blocklab_spec::{Cell, JobState, RunState, Spec, Stage};

use super::{Scheduler, SchedulerError, tail_suffix};
use crate::fleet::HostSession;
use crate::fleet::tasks::{BuildOf, TaskError};

const CHECK_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// The spec field a cell's setting comes from.
fn field_of(spec: &Spec, cell: &Cell, name: &str) -> String {
    let from_variant = spec
        .settings_variants
        .iter()
        .find(|(v, _)| *v == cell.settings_variant)
        .is_some_and(|(_, extra)| extra.iter().any(|(n, _)| n == name));
    if from_variant {
        format!("settings_variants.{}.{name}", cell.settings_variant)
    } else {
        format!("settings.{name}")
    }
}

impl Scheduler {
    /// Checks the settings of every build that still has queued runs. When a build refuses
    /// any, the job's queued runs fail with the reasons, the job fails, and the answer is
    /// false.
    pub(super) async fn check_settings(
        &self,
        job_id: &str,
        spec: &Spec,
        agent: &HostSession,
    ) -> Result<bool, SchedulerError> {
        let plan = spec.plan();
        let queued: Vec<u32> = self
            .catalog
            .runs(job_id)
            .await?
            .into_iter()
            .filter(|r| r.state == RunState::Queued)
            .map(|r| r.cell_index)
            .collect();
        let mut refused: Vec<String> = Vec::new();
        for point in spec.builds() {
            // (name, value) -> the spec field it comes from.
            let mut settings: BTreeMap<(String, String), String> = BTreeMap::new();
            for cell in plan.cells.iter().filter(|c| c.build_point() == point) {
                if !queued.contains(&cell.index) {
                    continue;
                }
                for (name, value) in spec.cell_settings(cell) {
                    let field = field_of(spec, cell, &name);
                    settings.entry((name, value)).or_insert(field);
                }
            }
            if settings.is_empty() {
                continue;
            }
            let given: Vec<(String, String)> = settings.keys().cloned().collect();
            let build = BuildOf {
                spec,
                point: &point,
            };
            match agent.check_settings(build, &given, CHECK_TIMEOUT).await {
                Ok(problems) => {
                    for p in problems {
                        let field = settings
                            .get(&(p.name.clone(), p.value.clone()))
                            .cloned()
                            .unwrap_or_else(|| format!("settings.{}", p.name));
                        let line = format!("{field} = {:?}: {}", p.value, p.reason);
                        if !refused.contains(&line) {
                            refused.push(line);
                        }
                    }
                }
                Err(TaskError::Failed {
                    reason, log_tail, ..
                }) => refused.push(format!(
                    "settings check failed: {reason}{}",
                    tail_suffix(&log_tail)
                )),
                Err(e @ TaskError::WrongKind { .. }) => refused.push(format!("agent {e}")),
                Err(e) => refused.push(format!("settings check failed: {e}")),
            }
        }
        if refused.is_empty() {
            return Ok(true);
        }
        let reason = format!("the build refuses settings: {}", refused.join("; "));
        tracing::warn!(job_id, reason = %reason, "settings refused");
        self.catalog
            .fail_queued_runs(job_id, Stage::Building, &reason, None)
            .await?;
        self.catalog
            .set_job_state(job_id, JobState::Failed, Some(&reason))
            .await?;
        self.changed(job_id);
        Ok(false)
    }
}
