//! `pgbench -i` with the default steps "dtgvp": drop, create tables, generate data on the
//! client side (COPY), vacuum, primary keys.

use std::io::Cursor;
use std::io::Write as _;
use std::time::Instant;

use blocklab_proto::{ConnInfo, InitDataResult};
use futures::SinkExt;
use tokio_postgres::Client;

use crate::conn::Target;
use crate::error::WorkerError;
use crate::script::{NACCOUNTS, NBRANCHES, NTELLERS, SCALE_32BIT_THRESHOLD};

/// The four tables, in pgbench's creation order: (name, 32-bit columns, 64-bit columns,
/// declares fillfactor).
pub const TABLES: [(&str, &str, &str, bool); 4] = [
    (
        "pgbench_history",
        "tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)",
        "tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)",
        false,
    ),
    (
        "pgbench_tellers",
        "tid int not null,bid int,tbalance int,filler char(84)",
        "tid int not null,bid int,tbalance int,filler char(84)",
        true,
    ),
    (
        "pgbench_accounts",
        "aid    int not null,bid int,abalance int,filler char(84)",
        "aid bigint not null,bid int,abalance int,filler char(84)",
        true,
    ),
    (
        "pgbench_branches",
        "bid int not null,bbalance int,filler char(88)",
        "bid int not null,bbalance int,filler char(88)",
        true,
    ),
];

const FILLFACTOR: u32 = 100;
/// Bytes of COPY data sent per chunk.
const COPY_CHUNK: usize = 256 * 1024;

/// The `create table` statements pgbench issues at this scale.
pub fn create_table_statements(scale: u32) -> Vec<String> {
    TABLES
        .iter()
        .map(|(name, small, big, ff)| {
            let cols = if scale >= SCALE_32BIT_THRESHOLD {
                big
            } else {
                small
            };
            let with = if *ff {
                format!(" with (fillfactor={FILLFACTOR})")
            } else {
                String::new()
            };
            format!("create table {name}({cols}){with}")
        })
        .collect()
}

/// Loads the pgbench tables at `scale` into the database `conn` names.
pub async fn init_data(conn: &ConnInfo, scale: u32) -> Result<InitDataResult, WorkerError> {
    init_data_conninfo(&conn.to_conninfo_string(), scale).await
}

/// As [`init_data`], from a libpq-style conninfo string.
pub async fn init_data_conninfo(conninfo: &str, scale: u32) -> Result<InitDataResult, WorkerError> {
    if scale == 0 {
        return Err(WorkerError::InvalidArgument(
            "scale must be at least 1".into(),
        ));
    }
    let started = Instant::now();
    let target = Target::parse(conninfo)?;
    let (client, conn_task) = target.connect().await?;
    tracing::info!(target = %target.display, scale, "dropping old tables");
    exec(
        &client,
        "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await?;
    tracing::info!("creating tables");
    for stmt in create_table_statements(scale) {
        exec(&client, &stmt).await?;
    }
    tracing::info!(
        accounts = NACCOUNTS * i64::from(scale),
        "generating data (client-side)"
    );
    generate(&client, i64::from(scale)).await?;
    tracing::info!("vacuuming");
    for t in [
        "pgbench_branches",
        "pgbench_tellers",
        "pgbench_accounts",
        "pgbench_history",
    ] {
        exec(&client, &format!("vacuum analyze {t}")).await?;
    }
    tracing::info!("creating primary keys");
    for (t, k) in [
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
        ("pgbench_accounts", "aid"),
    ] {
        exec(&client, &format!("alter table {t} add primary key ({k})")).await?;
    }
    let row = client
        .query_one("select count(*) from pgbench_accounts", &[])
        .await
        .map_err(|e| WorkerError::sql("counting pgbench_accounts", &e))?;
    let accounts_rows = u64::try_from(row.get::<_, i64>(0)).unwrap_or(0);
    drop(client);
    let _ = conn_task.await;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(accounts_rows, seconds, "data loaded");
    Ok(InitDataResult {
        seconds,
        accounts_rows,
    })
}

async fn exec(client: &Client, sql: &str) -> Result<(), WorkerError> {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| WorkerError::sql(format!("\"{sql}\" failed"), &e))
}

/// One transaction: truncate, then COPY branches, tellers and accounts (in that order, as
/// pgbench fills them). Branch and teller fillers are NULL; account fillers are blank.
async fn generate(client: &Client, scale: i64) -> Result<(), WorkerError> {
    exec(client, "begin").await?;
    exec(
        client,
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await?;
    let version: i64 = client
        .query_one("select current_setting('server_version_num')::int8", &[])
        .await
        .map_err(|e| WorkerError::sql("reading server_version_num", &e))?
        .get(0);
    let freeze = if version >= 140_000 {
        " with (freeze on)"
    } else {
        ""
    };
    copy_rows(
        client,
        "copy pgbench_branches from stdin",
        NBRANCHES * scale,
        |i, buf| writeln!(buf, "{}\t0\t\\N", i + 1),
    )
    .await?;
    copy_rows(
        client,
        "copy pgbench_tellers from stdin",
        NTELLERS * scale,
        |i, buf| writeln!(buf, "{}\t{}\t0\t\\N", i + 1, i / NTELLERS + 1),
    )
    .await?;
    let accounts = format!("copy pgbench_accounts from stdin{freeze}");
    copy_rows(client, &accounts, NACCOUNTS * scale, |i, buf| {
        writeln!(buf, "{}\t{}\t0\t", i + 1, i / NACCOUNTS + 1)
    })
    .await?;
    exec(client, "commit").await
}

/// Streams `rows` generated lines through COPY in chunks of about [`COPY_CHUNK`] bytes.
async fn copy_rows(
    client: &Client,
    statement: &str,
    rows: i64,
    mut line: impl FnMut(i64, &mut Vec<u8>) -> std::io::Result<()>,
) -> Result<(), WorkerError> {
    let err = |e: &tokio_postgres::Error| WorkerError::sql(format!("\"{statement}\" failed"), e);
    let sink = client
        .copy_in::<_, Cursor<Vec<u8>>>(statement)
        .await
        .map_err(|e| err(&e))?;
    futures::pin_mut!(sink);
    let mut buf = Vec::with_capacity(COPY_CHUNK + 128);
    for i in 0..rows {
        line(i, &mut buf).map_err(|e| WorkerError::Run(format!("formatting copy data: {e}")))?;
        if buf.len() >= COPY_CHUNK || i + 1 == rows {
            let chunk = std::mem::replace(&mut buf, Vec::with_capacity(COPY_CHUNK + 128));
            sink.send(Cursor::new(chunk)).await.map_err(|e| err(&e))?;
        }
        if (i + 1) % (NACCOUNTS * 10) == 0 {
            tracing::debug!(rows_done = i + 1, rows, "copy progress");
        }
    }
    sink.as_mut().finish().await.map_err(|e| err(&e))?;
    Ok(())
}

/// What pgbench does before a run unless `-n`: vacuum the small tables and empty the
/// history. Failures are reported and ignored, as pgbench does.
pub async fn prerun_vacuum(conninfo: &str) -> Result<(), WorkerError> {
    let target = Target::parse(conninfo)?;
    let (client, conn_task) = target.connect().await?;
    for sql in [
        "vacuum pgbench_branches",
        "vacuum pgbench_tellers",
        "truncate pgbench_history",
    ] {
        if let Err(e) = client.batch_execute(sql).await {
            tracing::warn!(statement = sql, error = %crate::error::describe(&e), "pre-run statement failed");
        }
    }
    drop(client);
    let _ = conn_task.await;
    Ok(())
}
