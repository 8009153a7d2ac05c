//! What a window's WAL cost per transaction: the LSN distance between the window's start and
//! end snapshots, the full-page-image bytes in it (exact from the agent's `pg_waldump
//! --stats` over that range; when the range's first segments were already recycled,
//! pg_stat_wal's `wal_fpi` delta x the block size, an upper bound), and its checkpoints.

use blocklab_proto::v1::{WalStatsTask, task, task_result::Outcome};
use std::time::Duration;

use super::Scheduler;
use super::metrics as wm;
use super::run::{Failure, RunCtx, unexpected, unrecorded};
use super::window::{Window, checkpoints};
use crate::catalog::{FpiSource, RunChoices};
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
            let t = WalStatsTask {
                start_lsn_bytes: start,
                end_lsn_bytes: end,
            };
            match ctx
                .agent
                .call(
                    ctx.run_id,
                    ctx.attempt,
                    task::Kind::WalStats(t),
                    WAL_STATS_TIMEOUT,
                )
                .await
            {
                Ok(Outcome::WalStats(r)) if r.complete => {
                    (r.fpi_bytes as f64, Some(FpiSource::Waldump))
                }
                Ok(Outcome::WalStats(r)) => {
                    tracing::info!(run_id = ctx.run_id, reason = %r.reason, "the window's WAL is gone; FPI bytes from pg_stat_wal");
                    (self.fpi_estimate(ctx, w), Some(FpiSource::StatWal))
                }
                Ok(Outcome::Error(e)) => {
                    tracing::warn!(run_id = ctx.run_id, reason = %e.reason, "pg_waldump failed; FPI bytes from pg_stat_wal");
                    (self.fpi_estimate(ctx, w), Some(FpiSource::StatWal))
                }
                other => return Err(unexpected(Stage::Collecting, other)),
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
        let disk_bytes = w
            .stats
            .iter()
            .find(|(n, _)| n == "disk_write_bytes")
            .map(|(_, v)| *v);
        Ok(wm::wal(
            wal_bytes,
            fpi_bytes,
            disk_bytes,
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
