//! The nine TPC-C tables (clause 1.3) as DBT-2 creates them, and the "finish" step: the
//! primary keys, DBT-2's secondary indexes, VACUUM ANALYZE.

use tokio_postgres::Client;

use crate::error::WorkerError;

/// The tables, in load order.
pub const TABLES: [&str; 9] = [
    "item",
    "warehouse",
    "district",
    "customer",
    "history",
    "orders",
    "new_order",
    "order_line",
    "stock",
];

/// CREATE TABLE statements; no keys or indexes (they come after the load).
pub const CREATE: [&str; 9] = [
    "create table item (
        i_id integer not null, i_im_id integer, i_name varchar(24), i_price numeric(5,2),
        i_data varchar(50))",
    "create table warehouse (
        w_id integer not null, w_name varchar(10), w_street_1 varchar(20),
        w_street_2 varchar(20), w_city varchar(20), w_state char(2), w_zip char(9),
        w_tax numeric(4,4), w_ytd numeric(12,2))",
    "create table district (
        d_id integer not null, d_w_id integer not null, d_name varchar(10),
        d_street_1 varchar(20), d_street_2 varchar(20), d_city varchar(20), d_state char(2),
        d_zip char(9), d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id integer)",
    "create table customer (
        c_id integer not null, c_d_id integer not null, c_w_id integer not null,
        c_first varchar(16), c_middle char(2), c_last varchar(16), c_street_1 varchar(20),
        c_street_2 varchar(20), c_city varchar(20), c_state char(2), c_zip char(9),
        c_phone char(16), c_since timestamp, c_credit char(2), c_credit_lim numeric(12,2),
        c_discount numeric(4,4), c_balance numeric(12,2), c_ytd_payment numeric(12,2),
        c_payment_cnt integer, c_delivery_cnt integer, c_data varchar(500))",
    "create table history (
        h_c_id integer, h_c_d_id integer, h_c_w_id integer, h_d_id integer, h_w_id integer,
        h_date timestamp, h_amount numeric(6,2), h_data varchar(24))",
    "create table orders (
        o_id integer not null, o_d_id integer not null, o_w_id integer not null,
        o_c_id integer, o_entry_d timestamp, o_carrier_id integer, o_ol_cnt integer,
        o_all_local integer)",
    "create table new_order (
        no_o_id integer not null, no_d_id integer not null, no_w_id integer not null)",
    "create table order_line (
        ol_o_id integer not null, ol_d_id integer not null, ol_w_id integer not null,
        ol_number integer not null, ol_i_id integer, ol_supply_w_id integer,
        ol_delivery_d timestamp, ol_quantity integer, ol_amount numeric(6,2),
        ol_dist_info char(24))",
    "create table stock (
        s_i_id integer not null, s_w_id integer not null, s_quantity integer,
        s_dist_01 char(24), s_dist_02 char(24), s_dist_03 char(24), s_dist_04 char(24),
        s_dist_05 char(24), s_dist_06 char(24), s_dist_07 char(24), s_dist_08 char(24),
        s_dist_09 char(24), s_dist_10 char(24), s_ytd numeric(8,0), s_order_cnt integer,
        s_remote_cnt integer, s_data varchar(50))",
];

/// The "finish" DDL: TPC-C primary keys (history has none), then DBT-2's secondary indexes.
pub const KEYS: [&str; 10] = [
    "alter table warehouse add primary key (w_id)",
    "alter table district add primary key (d_w_id, d_id)",
    "alter table customer add primary key (c_w_id, c_d_id, c_id)",
    "alter table new_order add primary key (no_w_id, no_d_id, no_o_id)",
    "alter table orders add primary key (o_w_id, o_d_id, o_id)",
    "alter table order_line add primary key (ol_w_id, ol_d_id, ol_o_id, ol_number)",
    "alter table item add primary key (i_id)",
    "alter table stock add primary key (s_w_id, s_i_id)",
    "create index i_customer on customer (c_w_id, c_d_id, c_last, c_first)",
    "create index i_orders on orders (o_w_id, o_d_id, o_c_id, o_id)",
];

pub async fn exec(client: &Client, sql: &str) -> Result<(), WorkerError> {
    client.batch_execute(sql).await.map_err(|e| {
        let first = sql.lines().next().unwrap_or(sql).trim();
        WorkerError::sql(format!("\"{first}\" failed"), &e)
    })
}

/// Drops any TPC-C tables and creates them empty.
pub async fn create(client: &Client) -> Result<(), WorkerError> {
    exec(
        client,
        &format!("drop table if exists {} cascade", TABLES.join(", ")),
    )
    .await?;
    for stmt in CREATE {
        exec(client, stmt).await?;
    }
    Ok(())
}

/// Keys and indexes, then VACUUM ANALYZE of every table; one note per statement.
pub async fn finish(
    client: &Client,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Vec<String>, WorkerError> {
    let mut notes = Vec::new();
    exec(client, "set maintenance_work_mem = '256MB'").await?;
    let vacuums: Vec<String> = TABLES
        .iter()
        .map(|t| format!("vacuum analyze {t}"))
        .collect();
    for stmt in KEYS
        .iter()
        .copied()
        .chain(vacuums.iter().map(String::as_str))
    {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(WorkerError::Run("cancelled".into()));
        }
        let t = std::time::Instant::now();
        tracing::info!(statement = stmt, "tpcc finish");
        exec(client, stmt).await?;
        notes.push(format!("{stmt}: {:.2} s", t.elapsed().as_secs_f64()));
    }
    Ok(notes)
}
