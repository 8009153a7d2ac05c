//! The single-user test: runs OSDB's query list in order, each statement timed once.

use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::TryStreamExt;
use tokio_postgres::Client;

use super::list::{Op, Query};
use super::schema;
use crate::engine::control::LoadControl;
use crate::error::WorkerError;

/// A timed query's outcome.
pub struct Outcome {
    pub seconds: f64,
    pub rows: u64,
    pub what: &'static str,
    pub refused: Option<String>,
}

fn failed(sql: &str, e: &tokio_postgres::Error) -> WorkerError {
    WorkerError::sql(format!("\"{sql}\" failed"), e)
}

/// Runs one op; returns (rows, what the rows are, the refusal when one was expected).
pub async fn run_op(
    client: &Client,
    op: &Op,
) -> Result<(u64, &'static str, Option<String>), WorkerError> {
    match op {
        Op::Select(sql) => {
            let stream = client
                .query_raw(sql.as_str(), std::iter::empty::<i32>())
                .await
                .map_err(|e| failed(sql, &e))?;
            futures::pin_mut!(stream);
            let mut n = 0u64;
            while stream
                .try_next()
                .await
                .map_err(|e| failed(sql, &e))?
                .is_some()
            {
                n += 1;
            }
            Ok((n, "returned", None))
        }
        Op::Dml(sql) => {
            let n = client
                .execute(sql.as_str(), &[])
                .await
                .map_err(|e| failed(sql, &e))?;
            Ok((n, "affected", None))
        }
        Op::Ddl(sql) => {
            schema::exec(client, sql).await?;
            Ok((0, "affected", None))
        }
        Op::Refused(sql, code) => match client.execute(sql.as_str(), &[]).await {
            Ok(n) => Ok((
                n,
                "affected",
                Some(format!("accepted, expected SQLSTATE {code}")),
            )),
            Err(e) => match e.code() {
                Some(c) if c.code() == *code => Ok((
                    0,
                    "affected",
                    Some(format!("refused as expected (SQLSTATE {code})")),
                )),
                _ => Err(failed(sql, &e)),
            },
        },
        Op::Steps(steps) => {
            let mut rows = 0;
            let mut refused = None;
            for s in steps {
                let (n, _, r) = Box::pin(run_op(client, s)).await?;
                rows += n;
                refused = refused.or(r);
            }
            Ok((rows, "affected", refused))
        }
    }
}

/// Drops what a previous single-user run may have left and recreates the updates indexes
/// it drops, so the list starts from the loaded state.
pub async fn prepare(client: &Client) -> Result<(), WorkerError> {
    let ine = |s: &str| s.replacen("create index", "create index if not exists", 1);
    schema::exec(
        client,
        "drop view if exists reportview; drop table if exists saveupdates, integrity_temp",
    )
    .await?;
    for s in [
        schema::UPDATES_INT_BT,
        schema::UPDATES_DOUBLE_BT,
        schema::UPDATES_DECIM_BT,
        schema::UPDATES_CODE_H,
    ] {
        schema::exec(client, &ine(s)).await?;
    }
    Ok(())
}

/// Puts back what the list leaves changed: the two updates indexes OSDB drops and does
/// not recreate, no view or saved copy; then VACUUM ANALYZE of the tables it modified.
pub async fn restore(client: &Client) -> Result<(), WorkerError> {
    schema::exec(client, schema::UPDATES_DOUBLE_BT).await?;
    schema::exec(client, schema::UPDATES_DECIM_BT).await?;
    schema::exec(client, "drop view reportview; drop table saveupdates").await?;
    schema::exec(client, "vacuum analyze updates, hundred").await
}

/// Runs the list in order, timing each query; stops early when cancelled.
pub async fn run_list(
    client: &Client,
    list: &[Query],
    ctl: &LoadControl,
) -> Result<Vec<(String, Outcome)>, WorkerError> {
    let mut out = Vec::with_capacity(list.len());
    for query in list {
        if ctl.stop.load(Ordering::Relaxed) {
            return Err(WorkerError::Run("cancelled".into()));
        }
        let started = Instant::now();
        let (rows, what, refused) = run_op(client, &query.op).await.map_err(|e| match e {
            WorkerError::Sql { context, reason } => WorkerError::Sql {
                context: format!("{}: {context}", query.name),
                reason,
            },
            other => other,
        })?;
        let seconds = started.elapsed().as_secs_f64();
        tracing::debug!(query = %query.name, rows, seconds, "as3ap query done");
        out.push((
            query.name.clone(),
            Outcome {
                seconds,
                rows,
                what,
                refused,
            },
        ));
    }
    Ok(out)
}
