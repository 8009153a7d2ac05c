//! SQL helpers of the maintenance task: sessions, statements under a time limit that are
//! cancelled on the server when abandoned, the streamed COPY of generated rows.

use std::future::Future;
use std::io::{Cursor, Write};
use std::time::Duration;

use futures::SinkExt;
use tokio_postgres::{CancelToken, Client, NoTls};

use super::plan::ROWS_PER_SCALE;
use crate::cluster::{self, Cluster};
use crate::error::AgentError;

/// Rows per COPY message (about 200 KiB).
const COPY_CHUNK_ROWS: u64 = 10_000;

/// A session of the agent in `db`, without a statement timeout (the run's settings may set
/// one; maintenance steps take as long as they take, under the task's own limit).
pub async fn connect(c: &Cluster, db: &str) -> Result<Client, AgentError> {
    let mut cfg = cluster::agent_config(c, db);
    cfg.options(format!(
        "{} -c statement_timeout=0",
        cluster::AGENT_SESSION_OPTIONS
    ));
    cluster::connect_ready(&cfg).await.map_err(|e| match e {
        AgentError::Postgres {
            reason, log_tail, ..
        } => AgentError::Postgres {
            context: format!("connect to database {db}"),
            reason,
            log_tail,
        },
        other => other,
    })
}

/// Maps a driver error to the agent's, with `context`.
pub fn pg(context: &str) -> impl Fn(tokio_postgres::Error) -> AgentError + '_ {
    move |e| AgentError::postgres(context, &e)
}

/// Sends a cancel request for the session's running statement when dropped armed (the
/// task was cancelled or the limit passed while the statement ran).
struct CancelOnDrop(Option<CancelToken>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = self.0.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move {
                if let Err(e) = token.cancel_query(NoTls).await {
                    tracing::debug!(error = %e, "cancel request failed");
                }
            });
        }
    }
}

/// Runs `fut` (statements on `client`) for at most `limit`; a timeout or the future being
/// dropped cancels what the server is running.
pub async fn guarded<T>(
    client: &Client,
    limit: Duration,
    what: &str,
    fut: impl Future<Output = Result<T, AgentError>>,
) -> Result<T, AgentError> {
    let mut guard = CancelOnDrop(Some(client.cancel_token()));
    let res = tokio::time::timeout(limit, fut).await;
    match res {
        Ok(r) => {
            guard.0 = None;
            r
        }
        Err(_) => Err(AgentError::Postgres {
            context: what.to_string(),
            reason: format!("timed out after {limit:?} (cancelled)"),
            log_tail: String::new(),
        }),
    }
}

/// `count(*)` of `table`.
pub async fn count(client: &Client, limit: Duration, table: &str) -> Result<u64, AgentError> {
    let q = format!("SELECT count(*) FROM {table}");
    let n: i64 = guarded(client, limit, &q, async {
        let r = client.query_one(&q, &[]).await.map_err(pg(&q))?;
        r.try_get(0).map_err(pg(&q))
    })
    .await?;
    u64::try_from(n).map_err(|_| AgentError::Other(format!("{q} returned {n}")))
}

/// One COPY text line of the pgbench_accounts shape: aid, bid (100000 accounts per
/// branch), abalance 0, empty filler (blank-padded by char(84)).
fn account_line(out: &mut Vec<u8>, aid: u64) {
    let bid = (aid - 1) / ROWS_PER_SCALE + 1;
    // Writing into a Vec cannot fail.
    let _ = writeln!(out, "{aid}\t{bid}\t0\t");
}

/// Creates `table` and COPYs `rows` generated rows into it, chunk by chunk.
pub async fn load(client: &Client, table: &str, rows: u64) -> Result<(), AgentError> {
    let create = format!(
        "CREATE TABLE {table} (aid integer NOT NULL, bid integer, abalance integer, \
         filler character(84))"
    );
    client.batch_execute(&create).await.map_err(pg(&create))?;
    let copy = format!("COPY {table} (aid, bid, abalance, filler) FROM STDIN");
    let sink = client
        .copy_in::<_, Cursor<Vec<u8>>>(&copy)
        .await
        .map_err(pg(&copy))?;
    let mut sink = std::pin::pin!(sink);
    let mut aid = 1;
    while aid <= rows {
        let end = (aid + COPY_CHUNK_ROWS).min(rows + 1);
        let mut chunk = Vec::with_capacity((end - aid) as usize * 24);
        for a in aid..end {
            account_line(&mut chunk, a);
        }
        sink.send(Cursor::new(chunk)).await.map_err(pg(&copy))?;
        aid = end;
    }
    let n = sink.as_mut().finish().await.map_err(pg(&copy))?;
    if n != rows {
        return Err(AgentError::Other(format!(
            "COPY into {table} stored {n} rows, expected {rows}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_the_pgbench_accounts_shape() {
        let mut out = Vec::new();
        account_line(&mut out, 1);
        account_line(&mut out, 100_000);
        account_line(&mut out, 100_001);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "1\t1\t0\t\n100000\t1\t0\t\n100001\t2\t0\t\n"
        );
    }
}
