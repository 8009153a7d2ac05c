//! The AS3AP schema as OSDB creates it for PostgreSQL: the five tables, COPY loading, and
//! the indexes in OSDB's `populateDataBase` order.

use std::io::Cursor;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures::SinkExt;
use tokio_postgres::Client;

use super::generate::{Table, TableGen};
use crate::engine::control::LoadControl;
use crate::error::WorkerError;

/// About this many bytes of COPY data per message.
const COPY_CHUNK: usize = 256 * 1024;

/// The ten AS3AP columns (OSDB's `create_table_standard`, with a real timestamp for the
/// date and the single and double precision floats AS3AP names).
pub const COLUMNS: &str = "col_key int not null, col_int int not null, col_signed int not null, \
     col_float real not null, col_double double precision not null, \
     col_decim numeric(18,2) not null, col_date timestamp not null, col_code char(10) not null, \
     col_name char(20) not null, col_address varchar(80) not null";

/// OSDB's indexes after the load, in its order: the clustered key btrees (unique, then
/// CLUSTER), the secondary btrees, the hash indexes (`_h`) and hundred's foreign key.
pub const INDEXES: [(&str, &str); 20] = [
    (
        "create_idx_uniques_key_bt",
        "create unique index uniques_key_bt on uniques using btree (col_key); cluster uniques using uniques_key_bt",
    ),
    (
        "create_idx_updates_key_bt",
        "create unique index updates_key_bt on updates using btree (col_key); cluster updates using updates_key_bt",
    ),
    (
        "create_idx_hundred_key_bt",
        "create unique index hundred_key_bt on hundred using btree (col_key); cluster hundred using hundred_key_bt",
    ),
    (
        "create_idx_tenpct_key_bt",
        "create unique index tenpct_key_bt on tenpct using btree (col_key); cluster tenpct using tenpct_key_bt",
    ),
    (
        "create_idx_tenpct_key_code_bt",
        "create index tenpct_key_code_bt on tenpct using btree (col_key, col_code)",
    ),
    (
        "create_idx_tiny_key_bt",
        "create index tiny_key_bt on tiny using btree (col_key)",
    ),
    (
        "create_idx_tenpct_int_bt",
        "create index tenpct_int_bt on tenpct using btree (col_int)",
    ),
    (
        "create_idx_tenpct_signed_bt",
        "create index tenpct_signed_bt on tenpct using btree (col_signed)",
    ),
    (
        "create_idx_uniques_code_h",
        "create index uniques_code_h on uniques using hash (col_code)",
    ),
    (
        "create_idx_tenpct_double_bt",
        "create index tenpct_double_bt on tenpct using btree (col_double)",
    ),
    ("create_idx_updates_decim_bt", UPDATES_DECIM_BT),
    (
        "create_idx_tenpct_float_bt",
        "create index tenpct_float_bt on tenpct using btree (col_float)",
    ),
    ("create_idx_updates_int_bt", UPDATES_INT_BT),
    (
        "create_idx_tenpct_decim_bt",
        "create index tenpct_decim_bt on tenpct using btree (col_decim)",
    ),
    (
        "create_idx_hundred_code_h",
        "create index hundred_code_h on hundred using hash (col_code)",
    ),
    (
        "create_idx_tenpct_name_h",
        "create index tenpct_name_h on tenpct using hash (col_name)",
    ),
    ("create_idx_updates_code_h", UPDATES_CODE_H),
    (
        "create_idx_tenpct_code_h",
        "create index tenpct_code_h on tenpct using hash (col_code)",
    ),
    ("create_idx_updates_double_bt", UPDATES_DOUBLE_BT),
    (
        "create_idx_hundred_foreign",
        "alter table hundred add constraint fk_hundred_updates foreign key (col_signed) references updates (col_key)",
    ),
];

pub const UPDATES_DECIM_BT: &str =
    "create index updates_decim_bt on updates using btree (col_decim)";
pub const UPDATES_INT_BT: &str = "create index updates_int_bt on updates using btree (col_int)";
pub const UPDATES_CODE_H: &str = "create index updates_code_h on updates using hash (col_code)";
pub const UPDATES_DOUBLE_BT: &str =
    "create index updates_double_bt on updates using btree (col_double)";

pub async fn exec(client: &Client, sql: &str) -> Result<(), WorkerError> {
    client
        .batch_execute(sql)
        .await
        .map_err(|e| WorkerError::sql(format!("\"{sql}\" failed"), &e))
}

fn check_stop(ctl: &LoadControl) -> Result<(), WorkerError> {
    if ctl.stop.load(Ordering::Relaxed) {
        Err(WorkerError::Run("cancelled".into()))
    } else {
        Ok(())
    }
}

/// Drops whatever a previous load or single-user run left, then creates the five tables.
pub async fn create_tables(client: &Client) -> Result<(), WorkerError> {
    exec(
        client,
        "drop view if exists reportview; \
         drop table if exists saveupdates, integrity_temp, hundred, uniques, tenpct, updates, tiny cascade",
    )
    .await?;
    for t in Table::ALL {
        exec(client, &format!("create table {} ({COLUMNS})", t.name())).await?;
    }
    exec(client, "create table tiny (col_key int not null)").await
}

/// COPYs the generated rows of every table, then tiny's single row.
pub async fn load_tables(client: &Client, rows: u64, ctl: &LoadControl) -> Result<(), WorkerError> {
    for t in Table::ALL {
        check_stop(ctl)?;
        let started = Instant::now();
        copy_table(client, t, rows, ctl).await?;
        tracing::info!(
            table = t.name(),
            rows,
            seconds = started.elapsed().as_secs_f64(),
            "as3ap table loaded"
        );
    }
    exec(client, "insert into tiny (col_key) values (0)").await
}

async fn copy_table(
    client: &Client,
    table: Table,
    rows: u64,
    ctl: &LoadControl,
) -> Result<(), WorkerError> {
    let statement = format!("copy {} from stdin", table.name());
    let err = |e: &tokio_postgres::Error| WorkerError::sql(format!("\"{statement}\" failed"), e);
    let gen_ = TableGen::new(table, rows);
    let sink = client
        .copy_in::<_, Cursor<Vec<u8>>>(statement.as_str())
        .await
        .map_err(|e| err(&e))?;
    futures::pin_mut!(sink);
    let mut buf = Vec::with_capacity(COPY_CHUNK + 256);
    for i in 0..rows {
        gen_.row(i, &mut buf)
            .map_err(|e| WorkerError::Run(format!("formatting copy data: {e}")))?;
        if buf.len() >= COPY_CHUNK || i + 1 == rows {
            check_stop(ctl)?;
            let chunk = std::mem::replace(&mut buf, Vec::with_capacity(COPY_CHUNK + 256));
            sink.send(Cursor::new(chunk)).await.map_err(|e| err(&e))?;
        }
    }
    sink.as_mut().finish().await.map_err(|e| err(&e))?;
    Ok(())
}

/// Builds OSDB's indexes in order, then VACUUM ANALYZE; returns one note per index.
pub async fn build_indexes(client: &Client, ctl: &LoadControl) -> Result<Vec<String>, WorkerError> {
    let mut notes = Vec::new();
    for (name, sql) in INDEXES {
        check_stop(ctl)?;
        let started = Instant::now();
        exec(client, sql).await?;
        notes.push(format!("{name}: {:.3} s", started.elapsed().as_secs_f64()));
    }
    check_stop(ctl)?;
    exec(
        client,
        "vacuum analyze uniques, hundred, tenpct, updates, tiny",
    )
    .await?;
    Ok(notes)
}

/// Rows in each table, in [`Table::ALL`] order then tiny.
pub async fn row_counts(client: &Client) -> Result<Vec<(String, i64)>, WorkerError> {
    let mut out = Vec::new();
    for t in ["uniques", "hundred", "tenpct", "updates", "tiny"] {
        let sql = format!("select count(*) from {t}");
        let n: i64 = client
            .query_one(sql.as_str(), &[])
            .await
            .map_err(|e| WorkerError::sql(format!("\"{sql}\" failed"), &e))?
            .get(0);
        out.push((t.to_string(), n));
    }
    Ok(out)
}
