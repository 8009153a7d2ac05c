//! Which coordinator leads. On a SQLite catalog the one coordinator leads from the start. On
//! a PostgreSQL catalog several may share it: each stands by (answering the read-only
//! Control calls, refusing hosts) until it takes the lease (`catalog/lease.rs`), then leads
//! (resumes unfinished jobs, accepts hosts, schedules) for as long as it renews the lease in
//! time. A leader that loses the lease stops: `serve` returns [`LeadLost`] and the process
//! exits, so a supervisor restarts it as a standby; its writes are already fenced.

use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::catalog::Catalog;

/// This coordinator's part, as the services read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// It leads in `epoch` (0 on SQLite, where there is no election).
    Leader { epoch: i64 },
    /// It stands by; `leader` is the leader's address as the lease names it, if any.
    Standby { leader: Option<String> },
}

impl Role {
    pub fn is_leader(&self) -> bool {
        matches!(self, Role::Leader { .. })
    }

    /// Why a host cannot attach here, or `None` when this coordinator leads.
    pub fn refusal(&self) -> Option<String> {
        match self {
            Role::Leader { .. } => None,
            Role::Standby { leader: Some(a) } => Some(format!(
                "this coordinator is a standby; the leader is at {a}"
            )),
            Role::Standby { leader: None } => {
                Some("this coordinator is a standby; no coordinator leads yet".into())
            }
        }
    }
}

/// Why a leader stopped leading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeadLost {
    #[error("the lead (epoch {epoch}) was taken over by another coordinator")]
    TakenOver { epoch: i64 },
    #[error("the lease (epoch {epoch}) could not be renewed within {ttl:?}: {error}")]
    NotRenewed {
        epoch: i64,
        ttl: Duration,
        error: String,
    },
}

/// Stands by until this coordinator takes the lease, then announces `Role::Leader` on
/// `role` and renews the lease every third of `ttl`. Returns when the lead is lost.
pub async fn elect(catalog: Catalog, ttl: Duration, role: watch::Sender<Role>) -> LeadLost {
    let poll = (ttl / 4).max(Duration::from_millis(100));
    let epoch = loop {
        match catalog.try_lead(ttl).await {
            Ok(Some(epoch)) => break epoch,
            Ok(None) => {
                let leader = catalog.leader().await.ok().flatten().map(|l| l.address);
                role.send_if_modified(|r| {
                    let new = Role::Standby { leader };
                    let changed = *r != new;
                    *r = new;
                    changed
                });
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the leader lease; standing by"),
        }
        tokio::time::sleep(poll).await;
    };
    tracing::info!(epoch, ttl_ms = ttl.as_millis() as u64, "leading");
    let _ = role.send(Role::Leader { epoch });
    // The lease runs from when the last successful renewal was sent; this coordinator stops
    // writing `margin` before it could expire, whether the renewals fail or hang.
    let margin = step_down_margin(ttl);
    let mut renewed = Instant::now();
    loop {
        tokio::time::sleep(ttl / 3).await;
        let sent = Instant::now();
        let deadline = (renewed + ttl)
            .checked_sub(margin)
            .map_or(Duration::ZERO, |d| d.saturating_duration_since(sent));
        let error = match tokio::time::timeout(deadline, catalog.renew_lead(ttl)).await {
            Ok(Ok(true)) => {
                renewed = sent;
                continue;
            }
            Ok(Ok(false)) => return LeadLost::TakenOver { epoch },
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer within {deadline:?}"),
        };
        tracing::warn!(error, epoch, "cannot renew the leader lease");
        if renewed.elapsed() + ttl / 3 + margin >= ttl {
            catalog.step_down();
            return LeadLost::NotRenewed { epoch, ttl, error };
        }
    }
}

/// How long before its lease could expire a leader that cannot renew stops writing: a
/// quarter of the lease, at least 100 ms.
pub fn step_down_margin(ttl: Duration) -> Duration {
    (ttl / 4).max(Duration::from_millis(100)).min(ttl / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standby_names_the_leader_when_it_knows_it() {
        assert_eq!(Role::Leader { epoch: 3 }.refusal(), None);
        assert_eq!(
            Role::Standby {
                leader: Some("10.0.0.2:7400".into())
            }
            .refusal()
            .as_deref(),
            Some("this coordinator is a standby; the leader is at 10.0.0.2:7400")
        );
        assert!(!Role::Standby { leader: None }.is_leader());
    }
}
