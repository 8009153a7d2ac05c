//! Generating the initial database (clause 4.3.3.1) and streaming it through COPY: the
//! item table once, then each warehouse with its districts, customers, history, orders,
//! new orders, order lines and stock in one transaction.

use std::io::Cursor;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::SinkExt;
use tokio_postgres::Client;

use super::params::{CUSTOMERS_PER_DISTRICT, DISTRICTS, ITEMS, ORDERS_PER_DISTRICT};
use super::rand::{C_LAST_LOAD, Rng, last_name};
use super::schema::exec;
use crate::error::WorkerError;

const COPY_CHUNK: usize = 256 * 1024;
/// Orders above this one are undelivered at load (new_order rows, null carrier).
const LAST_DELIVERED: i32 = 2100;

/// Rows written per table, for the step's notes.
#[derive(Clone, Debug, Default)]
pub struct Rows(pub Vec<(&'static str, u64)>);

impl Rows {
    fn add(&mut self, table: &'static str, n: u64) {
        match self.0.iter_mut().find(|(t, _)| *t == table) {
            Some(e) => e.1 += n,
            None => self.0.push((table, n)),
        }
    }
}

fn io_err(e: std::io::Error) -> WorkerError {
    WorkerError::Run(format!("formatting copy data: {e}"))
}

/// Streams `units` generated units (each writing zero or more lines) through COPY; returns
/// the number of lines.
async fn copy_rows(
    client: &Client,
    table: &str,
    units: usize,
    stop: &AtomicBool,
    mut unit: impl FnMut(usize, &mut Vec<u8>) -> std::io::Result<()>,
) -> Result<u64, WorkerError> {
    let statement = format!("copy {table} from stdin");
    let err = |e: &tokio_postgres::Error| WorkerError::sql(format!("\"{statement}\" failed"), e);
    let sink = client
        .copy_in::<_, Cursor<Vec<u8>>>(statement.as_str())
        .await
        .map_err(|e| err(&e))?;
    futures::pin_mut!(sink);
    let mut buf = Vec::with_capacity(COPY_CHUNK + 4096);
    let mut lines = 0u64;
    for i in 0..units {
        unit(i, &mut buf).map_err(io_err)?;
        if buf.len() >= COPY_CHUNK || i + 1 == units {
            if stop.load(Ordering::Relaxed) {
                return Err(WorkerError::Run("cancelled".into()));
            }
            lines += buf.iter().filter(|&&b| b == b'\n').count() as u64;
            let chunk = std::mem::replace(&mut buf, Vec::with_capacity(COPY_CHUNK + 4096));
            sink.send(Cursor::new(chunk)).await.map_err(|e| err(&e))?;
        }
    }
    sink.as_mut().finish().await.map_err(|e| err(&e))?;
    Ok(lines)
}

/// Writes an amount in cents as a numeric literal ("-10.00").
fn money(out: &mut Vec<u8>, cents: i64) -> std::io::Result<()> {
    let sign = if cents < 0 { "-" } else { "" };
    let c = cents.abs();
    write!(out, "{sign}{}.{:02}", c / 100, c % 100)
}

/// Street 1, street 2, city, state, zip (clause 4.3.2.7 for the zip).
fn address(r: &mut Rng, out: &mut Vec<u8>) {
    r.astring(out, 10, 20);
    out.push(b'\t');
    r.astring(out, 10, 20);
    out.push(b'\t');
    r.astring(out, 10, 20);
    out.push(b'\t');
    r.astring(out, 2, 2);
    out.push(b'\t');
    r.nstring(out, 4);
    out.extend_from_slice(b"11111");
}

/// The item table: 100000 rows, 10% with "ORIGINAL" in i_data.
pub async fn load_items(client: &Client, stop: &AtomicBool) -> Result<u64, WorkerError> {
    let mut r = Rng::seed(0x17e5);
    exec(client, "begin").await?;
    let n = copy_rows(client, "item", ITEMS as usize, stop, |i, out| {
        write!(out, "{}\t{}\t", i + 1, r.int(1, 10_000))?;
        r.astring(out, 14, 24);
        out.push(b'\t');
        money(out, r.uniform(100, 10_000))?;
        out.push(b'\t');
        r.data_original(out);
        out.push(b'\n');
        Ok(())
    })
    .await?;
    exec(client, "commit").await?;
    Ok(n)
}

/// One warehouse and everything that belongs to it, in one transaction.
pub async fn load_warehouse(
    client: &Client,
    w: i32,
    stop: &AtomicBool,
    rows: &mut Rows,
) -> Result<(), WorkerError> {
    let mut r = Rng::seed(0x7bcc_0000_0000 ^ u64::from(w.unsigned_abs()));
    exec(client, "begin").await?;
    let now: String = client
        .query_one("select localtimestamp::text", &[])
        .await
        .map_err(|e| WorkerError::sql("reading the load timestamp", &e))?
        .get(0);
    let n = copy_rows(client, "warehouse", 1, stop, |_, out| {
        write!(out, "{w}\t")?;
        r.astring(out, 6, 10);
        out.push(b'\t');
        address(&mut r, out);
        writeln!(out, "\t0.{:04}\t300000.00", r.uniform(0, 2000))
    })
    .await?;
    rows.add("warehouse", n);
    let n = copy_rows(client, "district", DISTRICTS as usize, stop, |i, out| {
        write!(out, "{}\t{w}\t", i + 1)?;
        r.astring(out, 6, 10);
        out.push(b'\t');
        address(&mut r, out);
        let next = ORDERS_PER_DISTRICT + 1;
        writeln!(out, "\t0.{:04}\t30000.00\t{next}", r.uniform(0, 2000))
    })
    .await?;
    rows.add("district", n);
    let per_d = CUSTOMERS_PER_DISTRICT as usize;
    let n = copy_rows(
        client,
        "customer",
        DISTRICTS as usize * per_d,
        stop,
        |i, out| {
            let (d, c) = (i / per_d + 1, (i % per_d + 1) as i64);
            write!(out, "{c}\t{d}\t{w}\t")?;
            r.astring(out, 8, 16);
            let last = if c <= 1000 {
                c - 1
            } else {
                r.nurand(255, 0, 999, C_LAST_LOAD)
            };
            write!(out, "\tOE\t{}\t", last_name(last))?;
            address(&mut r, out);
            out.push(b'\t');
            r.nstring(out, 16);
            let credit = if r.uniform(1, 10) == 1 { "BC" } else { "GC" };
            write!(
                out,
                "\t{now}\t{credit}\t50000.00\t0.{:04}\t",
                r.uniform(0, 5000)
            )?;
            out.extend_from_slice(b"-10.00\t10.00\t1\t0\t");
            r.astring(out, 300, 500);
            out.push(b'\n');
            Ok(())
        },
    )
    .await?;
    rows.add("customer", n);
    let n = copy_rows(
        client,
        "history",
        DISTRICTS as usize * per_d,
        stop,
        |i, out| {
            let (d, c) = (i / per_d + 1, i % per_d + 1);
            write!(out, "{c}\t{d}\t{w}\t{d}\t{w}\t{now}\t10.00\t")?;
            r.astring(out, 12, 24);
            out.push(b'\n');
            Ok(())
        },
    )
    .await?;
    rows.add("history", n);

    let per_o = ORDERS_PER_DISTRICT as usize;
    let mut ol_cnt = vec![0u8; DISTRICTS as usize * per_o];
    let mut perm = Vec::new();
    let n = copy_rows(
        client,
        "orders",
        DISTRICTS as usize * per_o,
        stop,
        |i, out| {
            let (d, o) = (i / per_o + 1, (i % per_o + 1) as i32);
            if o == 1 {
                perm = r.permutation(CUSTOMERS_PER_DISTRICT);
            }
            let cnt = r.int(5, 15);
            ol_cnt[i] = cnt as u8;
            let c = perm.get(o as usize - 1).copied().unwrap_or(o);
            write!(out, "{o}\t{d}\t{w}\t{c}\t{now}\t")?;
            if o <= LAST_DELIVERED {
                write!(out, "{}", r.int(1, 10))?;
            } else {
                out.extend_from_slice(b"\\N");
            }
            writeln!(out, "\t{cnt}\t1")
        },
    )
    .await?;
    rows.add("orders", n);
    let undelivered = (ORDERS_PER_DISTRICT - LAST_DELIVERED) as usize;
    let n = copy_rows(
        client,
        "new_order",
        DISTRICTS as usize * undelivered,
        stop,
        |i, out| {
            let (d, o) = (
                i / undelivered + 1,
                LAST_DELIVERED as usize + i % undelivered + 1,
            );
            writeln!(out, "{o}\t{d}\t{w}")
        },
    )
    .await?;
    rows.add("new_order", n);
    let n = copy_rows(
        client,
        "order_line",
        DISTRICTS as usize * per_o,
        stop,
        |i, out| {
            let (d, o) = (i / per_o + 1, (i % per_o + 1) as i32);
            for number in 1..=ol_cnt[i] {
                write!(out, "{o}\t{d}\t{w}\t{number}\t{}\t{w}\t", r.int(1, ITEMS))?;
                if o <= LAST_DELIVERED {
                    write!(out, "{now}\t5\t0.00\t")?;
                } else {
                    out.extend_from_slice(b"\\N\t5\t");
                    money(out, r.uniform(1, 999_999))?;
                    out.push(b'\t');
                }
                r.astring(out, 24, 24);
                out.push(b'\n');
            }
            Ok(())
        },
    )
    .await?;
    rows.add("order_line", n);
    let n = copy_rows(client, "stock", ITEMS as usize, stop, |i, out| {
        write!(out, "{}\t{w}\t{}\t", i + 1, r.int(10, 100))?;
        for _ in 0..DISTRICTS {
            r.astring(out, 24, 24);
            out.push(b'\t');
        }
        out.extend_from_slice(b"0\t0\t0\t");
        r.data_original(out);
        out.push(b'\n');
        Ok(())
    })
    .await?;
    rows.add("stock", n);
    exec(client, "commit").await
}
