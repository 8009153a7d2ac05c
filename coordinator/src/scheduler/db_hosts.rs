//! The database hosts of a job. One host by default; with `placement.db_hosts = N`, N
//! matching hosts at once (of the same hardware unless `same_hardware = false`), each pinned
//! to a slot: slot k runs the repetitions r with r mod N = k, a full replicate of the cells,
//! and the analysis treats the host as a block.

use std::sync::Arc;

use super::placement::{Pinned, Waited, hardware};
use super::{Scheduler, SchedulerError};
use crate::fleet::HostSession;
use blocklab_spec::{JobState, Spec, Stage};

impl Scheduler {
    /// Pins the job's database hosts, in slot order; `None` when the job cannot go on (it
    /// failed waiting, or was cancelled).
    pub(crate) async fn pin_hosts(
        &self,
        job_id: &str,
        spec: &Spec,
        pinned: Option<&str>,
    ) -> Result<Option<Vec<Pinned>>, SchedulerError> {
        if spec.db_hosts <= 1 {
            let pin = self
                .pin_agent(job_id, &spec.db_host_labels, pinned, spec.host_wait)
                .await?;
            return Ok(pin.map(|p| vec![p]));
        }
        let slots = self.catalog.job_slots(job_id).await?;
        let mut pins: Vec<Pinned> = Vec::new();
        for slot in 0..spec.db_hosts {
            let pinned = slots
                .iter()
                .find(|(s, _)| *s == slot)
                .map(|(_, h)| h.as_str());
            let Some(pin) = self.pin_slot(job_id, spec, slot, pinned, &pins).await? else {
                return Ok(None);
            };
            if pinned.is_none() {
                self.catalog
                    .pin_job_slot(job_id, slot, &pin.session.host_id)
                    .await?;
            }
            tracing::info!(job_id, slot, host_id = %pin.session.host_id, "job slot pinned");
            pins.push(pin);
        }
        Ok(Some(pins))
    }

    async fn pin_slot(
        &self,
        job_id: &str,
        spec: &Spec,
        slot: u32,
        pinned: Option<&str>,
        chosen: &[Pinned],
    ) -> Result<Option<Pinned>, SchedulerError> {
        let labels = &spec.db_host_labels;
        let like: Option<(String, String)> = chosen
            .first()
            .filter(|_| spec.same_hardware && pinned.is_none())
            .map(|f| (f.session.host_id.clone(), hardware(&f.session.facts_json)));
        let fits = |s: &Arc<HostSession>| {
            !chosen.iter().any(|c| c.session.host_id == s.host_id)
                && like
                    .as_ref()
                    .is_none_or(|(_, hw)| hardware(&s.facts_json) == *hw)
        };
        let reason = match (pinned, &like) {
            (Some(host), _) => format!("waiting for database host {host} (slot {slot}) to attach"),
            (None, Some((first, hw))) => format!(
                "waiting for database host {} of {} with labels {labels:?} and the hardware of {first} ({hw})",
                slot + 1,
                spec.db_hosts
            ),
            (None, None) => format!(
                "waiting for database host {} of {} with labels {labels:?}",
                slot + 1,
                spec.db_hosts
            ),
        };
        let found = self
            .wait_for(job_id, spec.host_wait, || {
                let candidates = self
                    .matching_agents(labels, pinned)
                    .into_iter()
                    .filter(fits)
                    .collect();
                self.placement.pin(candidates).ok_or_else(|| reason.clone())
            })
            .await;
        match found {
            Waited::Got(pin) => Ok(Some(pin)),
            Waited::Cancelled => Ok(None),
            Waited::TimedOut(reason) => {
                let reason = format!(
                    "{} for {} (placement.host_wait)",
                    reason.replacen("waiting for", "no", 1),
                    humantime::format_duration(spec.host_wait)
                );
                self.catalog
                    .fail_queued_runs(job_id, Stage::Queued, &reason, None)
                    .await?;
                self.catalog
                    .set_job_state(job_id, JobState::Failed, Some(&reason))
                    .await?;
                Ok(None)
            }
        }
    }
}
