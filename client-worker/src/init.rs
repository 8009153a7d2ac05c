//! `pgbench -i`: steps d (drop), t (create tables, optionally unlogged and partitioned),
//! g (generate on the client, COPY), G (generate on the server), v (vacuum), p (primary
//! keys), f (foreign keys); scale and fillfactor.

use std::io::Cursor;
use std::io::Write as _;
use std::time::Instant;

use futures::SinkExt;
use tokio_postgres::Client;

use crate::conn::Target;
use crate::error::WorkerError;
pub use crate::init_progress::InitProgress;
use crate::init_progress::Progress;
use blocklab_script::builtin::{NACCOUNTS, NBRANCHES, NTELLERS, SCALE_32BIT_THRESHOLD};

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

/// Bytes of COPY data sent per chunk.
const COPY_CHUNK: usize = 256 * 1024;

/// How pgbench partitions pgbench_accounts (`--partition-method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionMethod {
    Range,
    Hash,
}

/// `pgbench -i` options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitOptions {
    pub scale: u32,
    /// `-I`: any of d t g G v p f (and blanks), run in order.
    pub steps: String,
    /// `-F`, 10..=100.
    pub fillfactor: u32,
    /// `--partitions` (0 = none) and `--partition-method` (range when unset).
    pub partitions: u32,
    pub partition_method: Option<PartitionMethod>,
    pub unlogged: bool,
    /// pgbench's progress lines on stderr while the accounts are generated.
    pub progress: InitProgress,
}

impl InitOptions {
    /// pgbench's defaults: steps "dtgvp", fillfactor 100, no partitions.
    pub fn new(scale: u32) -> InitOptions {
        InitOptions {
            scale,
            steps: "dtgvp".into(),
            fillfactor: 100,
            partitions: 0,
            partition_method: None,
            unlogged: false,
            progress: InitProgress::Silent,
        }
    }

    pub fn validate(&self) -> Result<(), WorkerError> {
        let bad = |m: String| Err(WorkerError::InvalidArgument(m));
        if self.scale == 0 {
            return bad("scale must be at least 1".into());
        }
        if self.steps.trim().is_empty() {
            return bad("no initialization steps specified".into());
        }
        if let Some(c) = self.steps.chars().find(|c| !"dtgGvpf ".contains(*c)) {
            return bad(format!(
                "unrecognized initialization step \"{c}\" (allowed step characters are: \"dtgGvpf\")"
            ));
        }
        if !(10..=100).contains(&self.fillfactor) {
            return bad(format!("invalid fillfactor: {}", self.fillfactor));
        }
        if self.partitions == 0 && self.partition_method.is_some() {
            return bad("--partition-method requires greater than zero --partitions".into());
        }
        Ok(())
    }

    fn method(&self) -> Option<PartitionMethod> {
        (self.partitions > 0).then(|| self.partition_method.unwrap_or(PartitionMethod::Range))
    }
}

/// The `create table` statements pgbench issues.
pub fn create_table_statements(o: &InitOptions) -> Vec<String> {
    let unlogged = if o.unlogged { " unlogged" } else { "" };
    let mut out: Vec<String> = TABLES
        .iter()
        .map(|(name, small, big, ff)| {
            let cols = if o.scale >= SCALE_32BIT_THRESHOLD {
                big
            } else {
                small
            };
            let with = match (o.method(), *name, ff) {
                (Some(PartitionMethod::Range), "pgbench_accounts", _) => {
                    " partition by range (aid)".into()
                }
                (Some(PartitionMethod::Hash), "pgbench_accounts", _) => {
                    " partition by hash (aid)".into()
                }
                (_, _, true) => format!(" with (fillfactor={})", o.fillfactor),
                _ => String::new(),
            };
            format!("create{unlogged} table {name}({cols}){with}")
        })
        .collect();
    let n = i64::from(o.partitions);
    for p in 1..=n {
        let bounds = match o.method() {
            Some(PartitionMethod::Hash) => {
                format!("for values with (modulus {n}, remainder {})", p - 1)
            }
            _ => {
                let size = (NACCOUNTS * i64::from(o.scale) + n - 1) / n;
                let from = if p == 1 {
                    "minvalue".into()
                } else {
                    ((p - 1) * size + 1).to_string()
                };
                let to = if p < n {
                    (p * size + 1).to_string()
                } else {
                    "maxvalue".into()
                };
                format!("for values from ({from}) to ({to})")
            }
        };
        out.push(format!(
            "create{unlogged} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  {bounds} with (fillfactor={})",
            o.fillfactor
        ));
    }
    out
}

/// What a data load did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InitReport {
    pub seconds: f64,
    pub accounts_rows: u64,
}

/// Loads the pgbench tables at `scale` into the database a libpq-style conninfo names.
pub async fn init_data_conninfo(conninfo: &str, scale: u32) -> Result<InitReport, WorkerError> {
    init_with(conninfo, &InitOptions::new(scale)).await
}

const FKEYS: [&str; 5] = [
    "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
    "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
];

/// `pgbench -i` with every option: runs the steps in order.
pub async fn init_with(conninfo: &str, o: &InitOptions) -> Result<InitReport, WorkerError> {
    o.validate()?;
    let started = Instant::now();
    let target = Target::parse(conninfo)?;
    let (client, conn_task) = target.connect().await?;
    let scale = i64::from(o.scale);
    for step in o.steps.chars() {
        tracing::info!(target = %target.display, step = %step, scale, "init step");
        match step {
            'd' => exec(&client, "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers").await?,
            't' => {
                for stmt in create_table_statements(o) {
                    exec(&client, &stmt).await?;
                }
            }
            'g' => generate(&client, scale, o.partitions == 0, o.progress).await?,
            'G' => generate_server_side(&client, scale).await?,
            'v' => {
                for t in ["pgbench_branches", "pgbench_tellers", "pgbench_accounts", "pgbench_history"] {
                    exec(&client, &format!("vacuum analyze {t}")).await?;
                }
            }
            'p' => {
                for (t, k) in [("pgbench_branches", "bid"), ("pgbench_tellers", "tid"), ("pgbench_accounts", "aid")] {
                    exec(&client, &format!("alter table {t} add primary key ({k})")).await?;
                }
            }
            'f' => {
                for fk in FKEYS {
                    exec(&client, fk).await?;
                }
            }
            _ => {}
        }
    }
    let accounts_rows = match client
        .query_one("select count(*) from pgbench_accounts", &[])
        .await
    {
        Ok(row) => u64::try_from(row.get::<_, i64>(0)).unwrap_or(0),
        Err(_) => 0,
    };
    drop(client);
    let _ = conn_task.await;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(accounts_rows, seconds, "data loaded");
    Ok(InitReport {
        seconds,
        accounts_rows,
    })
}

/// Runs the user's SQL file `name` (many statements, one simple query, as psql -f would in
/// one go) on the database a conninfo names; its seconds. An error names the file and the
/// line the server points at.
pub async fn run_sql(conninfo: &str, name: &str, text: &str) -> Result<f64, WorkerError> {
    let started = Instant::now();
    let target = Target::parse(conninfo)?;
    let (client, conn_task) = target.connect().await?;
    tracing::info!(target = %target.display, file = name, bytes = text.len(), "running init sql");
    let res = client.batch_execute(text).await;
    drop(client);
    let _ = conn_task.await;
    res.map_err(|e| {
        let line = e
            .as_db_error()
            .and_then(|d| match d.position() {
                Some(tokio_postgres::error::ErrorPosition::Original(p)) => Some(*p as usize),
                _ => None,
            })
            .map(|p| {
                let upto: String = text.chars().take(p.saturating_sub(1)).collect();
                upto.matches('\n').count() + 1
            });
        let at = line.map_or(name.to_string(), |l| format!("{name}:{l}"));
        WorkerError::sql(at, &e)
    })?;
    let seconds = started.elapsed().as_secs_f64();
    tracing::info!(file = name, seconds, "init sql done");
    Ok(seconds)
}

async fn generate_server_side(client: &Client, scale: i64) -> Result<(), WorkerError> {
    exec(client, "begin").await?;
    exec(
        client,
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
    )
    .await?;
    exec(client, &format!("insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {}) as bid", NBRANCHES * scale)).await?;
    exec(client, &format!("insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {NTELLERS} + 1, 0 from generate_series(1, {}) as tid", NTELLERS * scale)).await?;
    exec(client, &format!("insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {NACCOUNTS} + 1, 0, '' from generate_series(1, {}) as aid", NACCOUNTS * scale)).await?;
    exec(client, "commit").await
}

async fn exec(client: &Client, sql: &str) -> Result<(), WorkerError> {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| WorkerError::sql(format!("\"{sql}\" failed"), &e))
}

/// One transaction: truncate, then COPY branches, tellers and accounts (in that order, as
/// pgbench fills them). Branch and teller fillers are NULL; account fillers are blank.
async fn generate(
    client: &Client,
    scale: i64,
    freeze_ok: bool,
    progress: InitProgress,
) -> Result<(), WorkerError> {
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
    let freeze = if freeze_ok && version >= 140_000 {
        " with (freeze on)"
    } else {
        ""
    };
    copy_rows(
        client,
        "copy pgbench_branches from stdin",
        NBRANCHES * scale,
        |i, buf| writeln!(buf, "{}\t0\t\\N", i + 1),
        InitProgress::Silent,
    )
    .await?;
    copy_rows(
        client,
        "copy pgbench_tellers from stdin",
        NTELLERS * scale,
        |i, buf| writeln!(buf, "{}\t{}\t0\t\\N", i + 1, i / NTELLERS + 1),
        InitProgress::Silent,
    )
    .await?;
    let accounts = format!("copy pgbench_accounts from stdin{freeze}");
    copy_rows(
        client,
        &accounts,
        NACCOUNTS * scale,
        |i, buf| writeln!(buf, "{}\t{}\t0\t", i + 1, i / NACCOUNTS + 1),
        progress,
    )
    .await?;
    exec(client, "commit").await
}

/// Streams `rows` generated lines through COPY in chunks of about [`COPY_CHUNK`] bytes.
async fn copy_rows(
    client: &Client,
    statement: &str,
    rows: i64,
    mut line: impl FnMut(i64, &mut Vec<u8>) -> std::io::Result<()>,
    progress: InitProgress,
) -> Result<(), WorkerError> {
    let mut shown = Progress::new(progress, rows);
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
        shown.row(i + 1);
        if (i + 1) % (NACCOUNTS * 10) == 0 {
            tracing::debug!(rows_done = i + 1, rows, "copy progress");
        }
    }
    shown.finish();
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
