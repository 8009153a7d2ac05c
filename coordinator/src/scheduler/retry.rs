//! Catalog writes that must not be lost to a passing error: a run's measured result, its
//! failure or loss. A transient catalog error (a busy SQLite file, a full disk, a pool
//! timeout, a reset PostgreSQL connection: what answers `Unavailable`) is retried with
//! exponential backoff while the value stays in memory; a permanent one (a corrupt catalog,
//! a fenced write after another coordinator took the lead) ends the retries at once, named.

use std::future::Future;
use std::time::Duration;

use crate::catalog::CatalogError;
use crate::error::{ErrorCode, ServiceError};

/// How long and how often a write is retried.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backoff {
    /// The wait after the first failure; each later wait doubles, up to `longest`.
    pub first: Duration,
    pub longest: Duration,
    /// No retry starts after this much time in all.
    pub give_up_after: Duration,
}

/// For a run's outcome: retried for up to ten minutes.
pub(crate) const OUTCOME: Backoff = Backoff {
    first: Duration::from_millis(250),
    longest: Duration::from_secs(15),
    give_up_after: Duration::from_secs(600),
};

/// Whether a retry may succeed.
fn transient(e: &CatalogError) -> bool {
    matches!(e, CatalogError::Sql(_)) && e.code() == ErrorCode::Unavailable
}

/// Runs `write` until it succeeds, fails permanently, or `backoff` gives up; `what` names
/// it in the log.
pub(crate) async fn retried<T, F, Fut>(
    what: &str,
    backoff: Backoff,
    mut write: F,
) -> Result<T, CatalogError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, CatalogError>>,
{
    let started = tokio::time::Instant::now();
    let mut wait = backoff.first;
    let mut attempt = 1u32;
    loop {
        match write().await {
            Ok(v) => {
                if attempt > 1 {
                    tracing::info!(what, attempt, "catalog write went through after retries");
                }
                return Ok(v);
            }
            Err(e) if transient(&e) && started.elapsed() + wait <= backoff.give_up_after => {
                tracing::warn!(what, attempt, error = %e, retry_in = ?wait, "catalog write failed; retrying");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(backoff.longest);
                attempt += 1;
            }
            Err(e) => {
                tracing::error!(what, attempt, error = %e, "catalog write failed for good");
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    const FAST: Backoff = Backoff {
        first: Duration::from_millis(1),
        longest: Duration::from_millis(4),
        give_up_after: Duration::from_secs(5),
    };

    /// Fails with `errors` in turn, then answers `Ok(attempt)`.
    async fn flaky(
        calls: &AtomicU32,
        errors: &[fn() -> CatalogError],
    ) -> Result<u32, CatalogError> {
        let n = calls.fetch_add(1, Ordering::SeqCst);
        match errors.get(n as usize) {
            Some(e) => Err(e()),
            None => Ok(n + 1),
        }
    }

    #[tokio::test]
    async fn transient_errors_are_retried_until_the_write_goes_through() {
        let calls = AtomicU32::new(0);
        let errors: [fn() -> CatalogError; 3] = [
            || CatalogError::Sql(sqlx::Error::PoolTimedOut),
            || {
                CatalogError::Sql(sqlx::Error::Io(std::io::Error::from(
                    std::io::ErrorKind::ConnectionReset,
                )))
            },
            || CatalogError::Sql(sqlx::Error::PoolTimedOut),
        ];
        let done = retried("result", FAST, || flaky(&calls, &errors)).await;
        assert_eq!(done.expect("went through"), 4);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn permanent_errors_end_the_retries_at_once() {
        let permanent: [fn() -> CatalogError; 3] = [
            || CatalogError::Sql(sqlx::Error::RowNotFound),
            || CatalogError::Fenced { epoch: Some(3) },
            || CatalogError::JobNotFound("j".into()),
        ];
        for e in permanent {
            let calls = AtomicU32::new(0);
            let errors = [e];
            let failed = retried("result", FAST, || flaky(&calls, &errors)).await;
            assert_eq!(failed.expect_err("permanent").to_string(), e().to_string());
            assert_eq!(calls.load(Ordering::SeqCst), 1);
        }
    }

    #[tokio::test]
    async fn retries_give_up_after_their_time() {
        let calls = AtomicU32::new(0);
        let errors: Vec<fn() -> CatalogError> =
            vec![|| CatalogError::Sql(sqlx::Error::PoolTimedOut); 10_000];
        let backoff = Backoff {
            give_up_after: Duration::from_millis(60),
            ..FAST
        };
        let started = std::time::Instant::now();
        let failed = retried("result", backoff, || flaky(&calls, &errors)).await;
        assert!(matches!(
            failed,
            Err(CatalogError::Sql(sqlx::Error::PoolTimedOut))
        ));
        // Waits of 1, 2, then 4 ms: the last retry starts before 60 ms have passed.
        assert!(
            started.elapsed() >= Duration::from_millis(56),
            "{:?}",
            started.elapsed()
        );
        assert!(calls.load(Ordering::SeqCst) <= 17, "{calls:?}");
    }

    /// A real transient error: another connection holds the SQLite file's write lock past
    /// the catalog's busy timeout; the write fails busy once, and goes through on a retry
    /// once the lock is released.
    #[tokio::test]
    async fn a_busy_sqlite_catalog_is_waited_out() {
        use sqlx::Connection as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("catalog.db");
        let catalog = crate::catalog::Catalog::open(&db).await.expect("catalog");
        let mut other =
            sqlx::sqlite::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
                .await
                .expect("second connection");
        sqlx::raw_sql("BEGIN EXCLUSIVE")
            .execute(&mut other)
            .await
            .expect("lock");
        let release = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(11)).await;
            sqlx::raw_sql("COMMIT")
                .execute(&mut other)
                .await
                .expect("unlock");
        });
        let started = std::time::Instant::now();
        let attempts = AtomicU32::new(0);
        let sha = "0".repeat(64);
        retried("enrollment", OUTCOME, || {
            attempts.fetch_add(1, Ordering::SeqCst);
            catalog.enroll_host("h1", blocklab_spec::HostRole::Agent, &sha, &[], "")
        })
        .await
        .expect("went through once the lock was released");
        assert!(attempts.load(Ordering::SeqCst) >= 2, "{attempts:?}");
        assert!(started.elapsed() >= Duration::from_secs(10));
        release.await.expect("released");
        let enrolled = catalog.host_credentials().await.expect("credentials");
        assert_eq!(enrolled.len(), 1);
    }
}
