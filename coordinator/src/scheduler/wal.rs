//! What a window's WAL cost per transaction: the LSN distance between the window's start and
//! end snapshots, the full-page-image bytes in it (exact from the agent's `pg_waldump
//! --stats` over that range; when the range's first segments were already recycled,
//! pg_stat_wal's `wal_fpi` delta x the block size, an upper bound), and its checkpoints.

use std::time::Duration;

use super::Scheduler;
use super::run::{Failure, RunCtx, task_failed, unrecorded};
use super::window::{Window, checkpoints};
use super::workload_metrics as wm;
use crate::catalog::{FpiSource, RunChoices};
use crate::fleet::tasks::{RunOf, TaskError, WalStats};
use blocklab_measure::Metric;
use blocklab_spec::Stage;

const WAL_STATS_TIMEOUT: Duration = Duration::from_secs(15 * 60);

impl Scheduler {
    /// `wal_bytes_per_txn`, `fpi_bytes_per_txn`, `disk_write_bytes(_per_txn)` and
    /// `checkpoints_in_window` of a window of `transactions`; records where the FPI bytes came
    /// from.
    pub(crate) async fn wal_metrics(
        &self,
        ctx: &RunCtx<'_>,
        w: &Window,
        transactions: u64,
    ) -> Result<Vec<Metric>, Failure> {
        let (start, end) = w.lsn;
        let wal_bytes = end.saturating_sub(start);
        let (fpi_bytes, source) = if wal_bytes == 0 {
            (0.0, None)
        } else {
            let run = RunOf {
                run_id: ctx.run_id,
                attempt: ctx.attempt,
            };
            match ctx
                .agent
                .wal_stats(run, start, end, WAL_STATS_TIMEOUT)
                .await
            {
                Ok(WalStats::Complete { fpi_bytes }) => {
                    (fpi_bytes as f64, Some(FpiSource::Waldump))
                }
                Ok(WalStats::Incomplete { reason }) => {
                    tracing::info!(run_id = ctx.run_id, reason = %reason, "the window's WAL is gone; FPI bytes from pg_stat_wal");
                    (self.fpi_estimate(ctx, w), Some(FpiSource::StatWal))
                }
                Err(TaskError::Failed { reason, .. }) => {
                    tracing::warn!(run_id = ctx.run_id, reason = %reason, "pg_waldump failed; FPI bytes from pg_stat_wal");
                    (self.fpi_estimate(ctx, w), Some(FpiSource::StatWal))
                }
                Err(e) => return Err(task_failed(Stage::Collecting)(e)),
            }
        };
        if source.is_some() {
            let choices = RunChoices {
                fpi_source: source,
                ..RunChoices::default()
            };
            self.catalog
                .record_run_choices(ctx.run_id, ctx.attempt, &choices)
                .await
                .map_err(unrecorded(Stage::Collecting))?;
        }
        let stat = |name: &str| w.stats.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        Ok(wm::wal(
            wm::WalBytes {
                wal: wal_bytes,
                fpi: fpi_bytes,
                disk: stat("disk_write_bytes"),
                archived: stat("archived_wal_bytes"),
            },
            checkpoints(&w.stats),
            transactions,
        ))
    }

    /// pg_stat_wal's full-page images in the window x the cell's block size.
    fn fpi_estimate(&self, ctx: &RunCtx<'_>, w: &Window) -> f64 {
        let fpi = w
            .stats
            .iter()
            .find(|(n, _)| n == "wal.wal_fpi")
            .map_or(0.0, |(_, v)| *v);
        fpi * f64::from(ctx.cell.block_size_kb * 1024)
    }
}
