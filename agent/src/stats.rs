//! Server statistics at one instant, as a flat JSON object of numeric counters; the
//! coordinator takes the difference of two snapshots around the measured window.
//!
//! Keys: `db.<column>` (pg_stat_database of the bench database), `bgwriter.<column>`
//! (pg_stat_bgwriter), `checkpointer.<column>` (pg_stat_checkpointer, PostgreSQL 17+),
//! `wal.<column>` (pg_stat_wal, 14+), `wal_lsn_bytes` (pg_current_wal_lsn() - '0/0'),
//! `archiver.<column>` (pg_stat_archiver), `archived_wal_bytes` (with archiving on: the
//! archived segments x `wal_segment_size`), `database_size_bytes`, `disk_write_bytes` (the kernel's count of bytes written to the block
//! devices under the data and WAL directories, `diskio.rs`). Only numeric columns are kept (timestamps are not counters).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::cluster::{BENCH_DB, Cluster, agent_config, is_running};
use crate::error::AgentError;
use crate::process::log_tail;

const CHECKPOINT_TIMEOUT: Duration = Duration::from_secs(15 * 60);
const QUERY_TIMEOUT: Duration = Duration::from_secs(60);

/// One snapshot.
#[derive(Clone, Debug)]
pub struct Snapshot {
    pub stats: Map<String, Value>,
    pub postmaster_start_time: String,
    pub checkpoint_done: bool,
}

/// The error for a cluster whose postmaster is gone, with the server log's tail.
pub fn server_gone(c: &Cluster) -> AgentError {
    AgentError::ServerGone {
        pid: c.pid,
        log_tail: log_tail(&[&c.run_dir.join("postgres.log")]),
    }
}

/// Takes a snapshot (after a CHECKPOINT if asked; after the other client sessions of the
/// bench database have ended, waiting at most [`SETTLE_LIMIT`], if `settle`). A dead
/// postmaster is reported as [`AgentError::ServerGone`], also when it dies while we are
/// connected.
pub async fn snapshot(
    c: &Cluster,
    checkpoint_first: bool,
    settle: bool,
) -> Result<Snapshot, AgentError> {
    if !is_running(c) {
        return Err(server_gone(c));
    }
    let res = take(c, checkpoint_first, settle).await;
    match res {
        Err(_) if !is_running(c) => Err(server_gone(c)),
        other => other.map_err(|e| e.with_extra_log(log_tail(&[&c.run_dir.join("postgres.log")]))),
    }
}

/// How long the end-of-window snapshot waits for the window's client sessions to end: a
/// backend publishes its counters when it exits (and at most once a second while busy).
pub const SETTLE_LIMIT: Duration = Duration::from_secs(5);

async fn take(c: &Cluster, checkpoint_first: bool, settle: bool) -> Result<Snapshot, AgentError> {
    let (client, conn) = agent_config(c, BENCH_DB)
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| AgentError::postgres("connect for statistics", &e))?;
    let conn = tokio::spawn(conn);
    let read_now = || async {
        tokio::time::timeout(QUERY_TIMEOUT, read(&client))
            .await
            .map_err(|_| AgentError::Other("reading statistics timed out".into()))?
    };
    let res = async {
        if settle {
            settle_sessions(&client).await?;
        }
        if !checkpoint_first {
            return read_now().await;
        }
        let before = requested_checkpoints(&read_now().await?.0);
        tokio::time::timeout(CHECKPOINT_TIMEOUT, client.batch_execute("CHECKPOINT"))
            .await
            .map_err(|_| AgentError::Other("CHECKPOINT timed out".into()))?
            .map_err(|e| AgentError::postgres("CHECKPOINT", &e))?;
        // The checkpointer publishes its counters just after CHECKPOINT returns; wait for
        // them, so this checkpoint is not mistaken for one inside the measured window.
        let mut snap = read_now().await?;
        for _ in 0..30 {
            if requested_checkpoints(&snap.0) > before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            snap = read_now().await?;
        }
        Ok(snap)
    }
    .await;
    drop(client);
    conn.abort();
    let (mut stats, postmaster_start_time) = res?;
    let wal = c
        .wal_dir
        .clone()
        .unwrap_or_else(|| c.data_dir.join("pg_wal"));
    if let Some(bytes) = crate::diskio::bytes_written(&[&c.data_dir, &wal]) {
        stats.insert("disk_write_bytes".into(), Value::from(bytes));
    }
    Ok(Snapshot {
        stats,
        postmaster_start_time,
        checkpoint_done: checkpoint_first,
    })
}

/// Waits until no other client session is connected to this database (at most
/// [`SETTLE_LIMIT`]; then it reads anyway, and says so in the log).
async fn settle_sessions(client: &tokio_postgres::Client) -> Result<(), AgentError> {
    let deadline = tokio::time::Instant::now() + SETTLE_LIMIT;
    loop {
        let others: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_catalog.pg_stat_activity WHERE datname = pg_catalog.current_database() \
                 AND backend_type = 'client backend' AND pid <> pg_catalog.pg_backend_pid()",
                &[],
            )
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| AgentError::postgres("count the other sessions", &e))?;
        if others == 0 {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            tracing::warn!(
                sessions = others,
                "client sessions still open after the window; reading the statistics anyway"
            );
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Requested checkpoints so far (pg_stat_bgwriter before 17, pg_stat_checkpointer after).
fn requested_checkpoints(stats: &Map<String, Value>) -> f64 {
    ["bgwriter.checkpoints_req", "checkpointer.num_requested"]
        .iter()
        .filter_map(|k| stats.get(*k).and_then(Value::as_f64))
        .sum()
}

async fn read(client: &tokio_postgres::Client) -> Result<(Map<String, Value>, String), AgentError> {
    let q = |sql: &'static str| async move {
        client
            .query_opt(sql, &[])
            .await
            .map_err(|e| AgentError::postgres(format!("statistics query {sql:?}"), &e))
    };
    let mut out = Map::new();
    // (key prefix, view, filter); views missing in this version are skipped.
    let views = [
        (
            "db",
            "pg_stat_database",
            " WHERE datname = pg_catalog.current_database()",
        ),
        ("bgwriter", "pg_stat_bgwriter", ""),
        ("checkpointer", "pg_stat_checkpointer", ""),
        ("wal", "pg_stat_wal", ""),
        ("archiver", "pg_stat_archiver", ""),
    ];
    for (prefix, view, filter) in views {
        let exists: bool = client
            .query_one(
                "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
                &[&format!("pg_catalog.{view}")],
            )
            .await
            .and_then(|r| r.try_get(0))
            .map_err(|e| AgentError::postgres("look up statistics views", &e))?;
        if !exists {
            continue;
        }
        let sql =
            format!("SELECT pg_catalog.row_to_json(v)::text FROM pg_catalog.{view} v{filter}");
        let row = client
            .query_opt(&sql, &[])
            .await
            .map_err(|e| AgentError::postgres(format!("read {view}"), &e))?;
        if let Some(row) = row {
            flatten_into(&mut out, prefix, &json_of(&row)?);
        }
    }
    let row = q("SELECT (pg_catalog.pg_current_wal_lsn() OPERATOR(pg_catalog.-) '0/0'::pg_catalog.pg_lsn)::pg_catalog.int8, \
                 pg_catalog.pg_database_size(pg_catalog.current_database()), \
                 pg_catalog.pg_postmaster_start_time()::pg_catalog.text")
    .await?
    .ok_or_else(|| AgentError::Other("no row from the LSN query".into()))?;
    let lsn: i64 = row
        .try_get(0)
        .map_err(|e| AgentError::postgres("read WAL LSN", &e))?;
    let size: i64 = row
        .try_get(1)
        .map_err(|e| AgentError::postgres("read database size", &e))?;
    let start: String = row
        .try_get(2)
        .map_err(|e| AgentError::postgres("read postmaster start time", &e))?;
    // With archiving on: the bytes of the WAL segments archived so far.
    let archived = q(
        "SELECT a.archived_count OPERATOR(pg_catalog.*) s.setting::pg_catalog.int8 \
                      FROM pg_catalog.pg_stat_archiver a, pg_catalog.pg_settings s \
                      WHERE s.name OPERATOR(pg_catalog.=) 'wal_segment_size' \
                      AND pg_catalog.current_setting('archive_mode') OPERATOR(pg_catalog.<>) 'off'",
    )
    .await?;
    if let Some(row) = archived {
        let bytes: i64 = row
            .try_get(0)
            .map_err(|e| AgentError::postgres("read archived WAL", &e))?;
        out.insert("archived_wal_bytes".into(), Value::from(bytes));
    }
    out.insert("wal_lsn_bytes".into(), Value::from(lsn));
    out.insert("database_size_bytes".into(), Value::from(size));
    Ok((out, start))
}

fn json_of(row: &tokio_postgres::Row) -> Result<Value, AgentError> {
    let text: String = row
        .try_get(0)
        .map_err(|e| AgentError::postgres("read statistics row", &e))?;
    serde_json::from_str(&text).map_err(|e| AgentError::Other(format!("statistics JSON: {e}")))
}

/// Copies the numeric fields of a JSON object as `prefix.name`.
pub fn flatten_into(out: &mut Map<String, Value>, prefix: &str, row: &Value) {
    if let Some(obj) = row.as_object() {
        for (k, v) in obj {
            if v.is_number() {
                out.insert(format!("{prefix}.{k}"), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_numbers_are_kept_with_their_prefix() {
        let row = serde_json::json!({
            "datid": 16384, "datname": "bench", "xact_commit": 12, "blk_read_time": 1.5,
            "stats_reset": null, "wal_bytes": 123456789012u64
        });
        let mut out = Map::new();
        flatten_into(&mut out, "db", &row);
        let keys: Vec<&str> = out.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "db.blk_read_time",
                "db.datid",
                "db.wal_bytes",
                "db.xact_commit"
            ]
        );
        assert_eq!(out["db.wal_bytes"], 123456789012u64);
    }
}
