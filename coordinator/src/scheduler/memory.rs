//! Memory held constant across page sizes: every setting whose unit is a page gets, in every
//! cell, the bytes a server of the cell's memory reference (the cell at the baseline page
//! sizes with the same other dimensions) resolves it to, written in kB. The reference values
//! are read once per job and reference cell from a server of that build started for the
//! purpose (initdb, start, `pg_settings`, stop), so defaults and automatic values (such as
//! `wal_buffers = -1`) are held too, and a new PostgreSQL version's page-unit settings are
//! found without a list.

use std::time::Duration;

use blocklab_spec::{Cell, Plan, Spec, Stage};

use super::Scheduler;
use super::run::{Failure, HeldMemory, task_failed};
use crate::fleet::HostSession;
use crate::fleet::tasks::{BuildOf, RunOf, ServerRequest};

const REFERENCE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

impl Scheduler {
    /// The settings that hold `cell`'s memory at its reference's bytes (none for plans stored
    /// before memory was held this way).
    pub(crate) async fn held_memory(
        &self,
        job_id: &str,
        spec: &Spec,
        plan: &Plan,
        cell: &Cell,
        agent: &HostSession,
        held: &mut HeldMemory,
    ) -> Result<Vec<(String, String)>, Failure> {
        let Some(index) = cell.memory_reference else {
            return Ok(Vec::new());
        };
        if let Some(h) = held.get(&index) {
            return Ok(h.clone());
        }
        let Some(reference) = plan.cells.get(index as usize) else {
            return Ok(Vec::new());
        };
        let run_id = format!("{job_id}-memory-{index}");
        let point = reference.build_point();
        let request = ServerRequest {
            build: BuildOf {
                spec,
                point: &point,
            },
            settings: spec.cell_settings(reference),
            allowed_client_addresses: Vec::new(),
            separate_wal: false,
            archive_wal: false,
        };
        tracing::info!(job_id, cell = index, "reading the memory reference");
        let run = RunOf {
            run_id: &run_id,
            attempt: 1,
        };
        let started = agent.prepare_server(run, request, REFERENCE_TIMEOUT).await;
        let stopped = agent.stop_server(run, REFERENCE_TIMEOUT).await;
        if let Err(e) = &stopped {
            tracing::warn!(job_id, run_id, error = %e, "stopping the memory reference server failed");
        }
        let server = match started {
            Ok(p) => p,
            Err(e) => {
                let mut f = task_failed(Stage::Starting)(e);
                f.reason = format!(
                    "memory reference ({}): {}",
                    cell_name(spec, reference),
                    f.reason
                );
                return Err(f);
            }
        };
        let values: Vec<(String, String, String)> = server
            .effective_settings
            .into_iter()
            .map(|s| (s.name, s.setting, s.unit))
            .collect();
        let h = blocklab_spec::held_settings(&values);
        tracing::info!(
            job_id,
            cell = index,
            settings = h.len(),
            "memory reference read"
        );
        held.insert(index, h.clone());
        Ok(h)
    }
}

fn cell_name(spec: &Spec, c: &Cell) -> String {
    c.label_in(spec)
}
