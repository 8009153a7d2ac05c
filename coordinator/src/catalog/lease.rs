//! The leader lease of coordinators sharing one PostgreSQL catalog (the fence every write
//! checks is in `fence.rs`). The lease is one row (`leader_lease`): who leads, its epoch and when the lease
//! expires, by the database's clock (so the coordinators' clocks do not matter). A
//! coordinator takes the lease only once it has expired, with the next epoch; the leader
//! renews it well before it expires.
//!
//! Fencing: once a catalog is fenced ([`Catalog::fence`]), each write transaction first reads
//! the lease row `FOR SHARE` and goes on only if the row still holds this coordinator's
//! epoch. A takeover updates that row, so it waits for the writes in flight to commit, and
//! every write that begins after it sees the new epoch and is refused
//! ([`CatalogError::Fenced`]): no write of an old epoch lands once a new one has begun. A
//! fenced catalog that holds no epoch (a standby) refuses every write without asking.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use sqlx::Row;

use super::fence::{Fence, Leader};
use super::{Backend, Catalog, CatalogError, now};

/// The database's clock in unix milliseconds (PostgreSQL; the lease is only taken there).
const DB_NOW_MS: &str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";

impl Catalog {
    /// Fences this catalog handle (and its clones) for leadership under `address`: from now
    /// on it writes only while it holds the lease ([`Catalog::try_lead`]).
    pub fn fence(mut self, address: &str) -> Self {
        self.fence = Some(Arc::new(Fence {
            holder_id: uuid::Uuid::new_v4().to_string(),
            address: address.to_string(),
            epoch: AtomicI64::new(0),
        }));
        self
    }

    /// The epoch this coordinator leads in, if it leads.
    pub fn epoch(&self) -> Option<i64> {
        let e = self.fence.as_ref()?.epoch.load(Ordering::Acquire);
        (e > 0).then_some(e)
    }

    /// Takes the lease if it is free or expired, for `ttl`, with the next epoch. Returns the
    /// epoch taken, or `None` while another coordinator's lease is live.
    pub async fn try_lead(&self, ttl: Duration) -> Result<Option<i64>, CatalogError> {
        let fence = self.lease_fence()?;
        let sql = format!(
            "INSERT INTO leader_lease (id, holder_id, address, epoch, expires_ms, acquired_at)
             VALUES (1, $1, $2, 1, {DB_NOW_MS} + $3, $4)
             ON CONFLICT (id) DO UPDATE SET holder_id = excluded.holder_id,
               address = excluded.address, epoch = leader_lease.epoch + 1,
               expires_ms = excluded.expires_ms, acquired_at = excluded.acquired_at
             WHERE leader_lease.expires_ms < {DB_NOW_MS}
             RETURNING epoch"
        );
        let epoch: Option<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(&fence.holder_id)
            .bind(&fence.address)
            .bind(ttl_ms(ttl))
            .bind(now())
            .fetch_optional(&self.lease_pool)
            .await?;
        if let Some(e) = epoch {
            fence.epoch.store(e, Ordering::Release);
        }
        Ok(epoch)
    }

    /// Extends the lease by `ttl` from now. `false` when it is no longer this coordinator's
    /// (another took it over): this coordinator has lost the lead and writes nothing more.
    pub async fn renew_lead(&self, ttl: Duration) -> Result<bool, CatalogError> {
        let fence = self.lease_fence()?;
        let epoch = fence.epoch.load(Ordering::Acquire);
        if epoch == 0 {
            return Ok(false);
        }
        let sql = format!(
            "UPDATE leader_lease SET expires_ms = {DB_NOW_MS} + $1
             WHERE id = 1 AND holder_id = $2 AND epoch = $3"
        );
        let n = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ttl_ms(ttl))
            .bind(&fence.holder_id)
            .bind(epoch)
            .execute(&self.lease_pool)
            .await?
            .rows_affected();
        if n != 1 {
            self.step_down();
        }
        Ok(n == 1)
    }

    /// Stops writing as the leader (the lease was lost, or could not be renewed in time).
    pub fn step_down(&self) {
        if let Some(f) = &self.fence {
            f.epoch.store(0, Ordering::Release);
        }
    }

    /// Who holds the lease, if anyone ever did.
    pub async fn leader(&self) -> Result<Option<Leader>, CatalogError> {
        if self.backend != Backend::Postgres {
            return Ok(None);
        }
        let sql = format!(
            "SELECT address, epoch, expires_ms - {DB_NOW_MS} AS left_ms FROM leader_lease WHERE id = 1"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_optional(&self.lease_pool)
            .await?;
        row.map(|r| {
            Ok(Leader {
                address: r.try_get("address")?,
                epoch: r.try_get("epoch")?,
                expires_in_ms: r.try_get("left_ms")?,
            })
        })
        .transpose()
    }

    fn lease_fence(&self) -> Result<&Fence, CatalogError> {
        match (&self.fence, self.backend) {
            (Some(f), Backend::Postgres) => Ok(f),
            _ => Err(CatalogError::NoLease),
        }
    }
}

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2)
}
