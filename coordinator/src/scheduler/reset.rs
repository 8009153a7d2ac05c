//! Cold means cold: after a run's data load the agent empties the caches its layout asks
//! for (`cold`: a clean restart, so shared buffers start empty; `drop_os_cache`: the OS page
//! cache), just before the warm-up. The rule when the OS cache cannot be dropped: the run
//! fails, naming the layout option, for every workload kind (a run that was asked to start
//! cold and did not measured something else).

use blocklab_spec::{Layout, Stage};
use std::time::Duration;

use super::Scheduler;
use super::run::{Failure, RunCtx, fail, task_failed, unrecorded};
use crate::catalog::RunChoices;
use crate::fleet::tasks::{CachesReset, Reset, RunOf};

const RESET_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The reset a layout asks for after the load; `None` when it asks for none.
pub(crate) fn reset_task(layout: &Layout) -> Option<Reset> {
    (layout.cold || layout.drop_os_cache).then_some(Reset {
        restart_server: layout.cold,
        drop_os_cache: layout.drop_os_cache,
    })
}

/// The rule: a layout that asks for the OS cache drop fails the run when the agent could
/// not drop it.
pub(crate) fn check_reset(layout: &Layout, r: &CachesReset) -> Result<(), Failure> {
    if layout.drop_os_cache && !r.os_cache_dropped {
        let why = if r.os_cache_error.is_empty() {
            "not permitted"
        } else {
            r.os_cache_error.as_str()
        };
        return Err(fail(
            Stage::WarmingUp,
            format!(
                "layout.drop_os_cache = true, but the agent could not drop the OS page cache \
                 ({why}); install the agent's page cache helper (deploy/install.sh), or set \
                 layout.drop_os_cache = false"
            ),
            "",
        ));
    }
    Ok(())
}

/// What a reset did, as the run's choices record it.
pub(crate) fn reset_choices(r: Option<&CachesReset>) -> RunChoices {
    RunChoices {
        os_cache_dropped: Some(r.is_some_and(|r| r.os_cache_dropped)),
        server_restarted: Some(r.is_some_and(|r| r.server_restarted)),
        postmaster_start_time: r
            .map(|r| r.postmaster_start_time.clone())
            .filter(|t| !t.is_empty()),
        ..RunChoices::default()
    }
}

impl Scheduler {
    /// Resets the caches after the data load as the layout asks (or records that none was
    /// asked for), applies the rule, and records what was done.
    pub(crate) async fn reset_caches(&self, ctx: &RunCtx<'_>) -> Result<(), Failure> {
        let layout = &ctx.spec.layout;
        let done = match reset_task(layout) {
            None => None,
            Some(t) => Some(
                ctx.agent
                    .reset_caches(
                        RunOf {
                            run_id: ctx.run_id,
                            attempt: ctx.attempt,
                        },
                        t,
                        RESET_TIMEOUT,
                    )
                    .await
                    .map_err(task_failed(Stage::WarmingUp))?,
            ),
        };
        self.catalog
            .record_run_choices(ctx.run_id, ctx.attempt, &reset_choices(done.as_ref()))
            .await
            .map_err(unrecorded(Stage::WarmingUp))?;
        if let Some(r) = &done {
            tracing::info!(
                run_id = ctx.run_id,
                server_restarted = r.server_restarted,
                os_cache_dropped = r.os_cache_dropped,
                "caches reset after the load"
            );
            check_reset(layout, r)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(cold: bool, drop_os_cache: bool) -> Layout {
        Layout {
            separate_wal: false,
            drop_os_cache,
            checkpoint_before: true,
            cold,
            archive_wal: false,
        }
    }

    #[test]
    fn the_layout_names_the_reset() {
        assert_eq!(reset_task(&layout(false, false)), None);
        let t = reset_task(&layout(true, false)).unwrap();
        assert!(t.restart_server && !t.drop_os_cache);
        let t = reset_task(&layout(false, true)).unwrap();
        assert!(!t.restart_server && t.drop_os_cache);
    }

    #[test]
    fn an_os_cache_that_was_not_dropped_fails_the_run_naming_the_option() {
        let refused = CachesReset {
            server_restarted: true,
            os_cache_dropped: false,
            os_cache_error: "cannot write /proc/sys/vm/drop_caches: Permission denied".into(),
            postmaster_start_time: "t".into(),
        };
        let f = check_reset(&layout(true, true), &refused).unwrap_err();
        assert_eq!(f.stage, Stage::WarmingUp);
        assert!(
            f.reason.contains("layout.drop_os_cache") && f.reason.contains("Permission denied"),
            "{}",
            f.reason
        );
        assert!(!f.lost);
        // A cold restart alone asks for no drop.
        assert!(check_reset(&layout(true, false), &refused).is_ok());
        let dropped = CachesReset {
            os_cache_dropped: true,
            ..refused
        };
        assert!(check_reset(&layout(false, true), &dropped).is_ok());
        let c = reset_choices(Some(&dropped));
        assert_eq!(
            (c.os_cache_dropped, c.server_restarted),
            (Some(true), Some(true))
        );
        let none = reset_choices(None);
        assert_eq!(
            (none.os_cache_dropped, none.server_restarted),
            (Some(false), Some(false))
        );
    }
}
