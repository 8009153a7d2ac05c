//! The fence on a shared catalog's writes: who this coordinator is among those sharing the
//! catalog, the epoch it leads in, and the check at the start of each write transaction,
//! under a lock timeout (the lease itself is taken and renewed in `lease.rs`).

use std::sync::atomic::{AtomicI64, Ordering};

use sqlx::{Any, Transaction};

use super::error::CatalogError;

/// Who this coordinator is among those sharing the catalog, and the epoch it leads in.
#[derive(Debug)]
pub(super) struct Fence {
    /// Unique per coordinator process.
    pub holder_id: String,
    /// The advertised address others are pointed to while this one leads.
    pub address: String,
    /// The epoch this coordinator leads in; 0 while it does not lead.
    pub epoch: AtomicI64,
}

/// The lease row as read: who leads, in which epoch, and whether the lease is still live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    pub address: String,
    pub epoch: i64,
    /// Milliseconds until the lease expires (negative once it has).
    pub expires_in_ms: i64,
}

/// How long a fenced write waits for a lock before it fails.
pub(super) const FENCED_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The fence check at the start of a write transaction: the lease row must still hold this
/// coordinator's epoch (read `FOR SHARE`, so a takeover waits for this transaction).
pub(super) async fn check(
    fence: &Fence,
    tx: &mut Transaction<'static, Any>,
) -> Result<(), CatalogError> {
    let epoch = fence.epoch.load(Ordering::Acquire);
    if epoch == 0 {
        return Err(CatalogError::Fenced { epoch: None });
    }
    // No fenced write waits long on a lock (a takeover's, or a stuck session's): it fails
    // as unavailable and is retried or reported instead.
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET LOCAL lock_timeout = {}",
        FENCED_LOCK_TIMEOUT.as_millis()
    )))
    .execute(&mut **tx)
    .await?;
    let held: Option<i64> = sqlx::query_scalar(
        "SELECT epoch FROM leader_lease WHERE id = 1 AND holder_id = $1 AND epoch = $2 FOR SHARE",
    )
    .bind(&fence.holder_id)
    .bind(epoch)
    .fetch_optional(&mut **tx)
    .await?;
    match held {
        Some(_) => Ok(()),
        None => {
            fence.epoch.store(0, Ordering::Release);
            Err(CatalogError::Fenced { epoch: Some(epoch) })
        }
    }
}
