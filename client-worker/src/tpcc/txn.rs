//! The five TPC-C transactions (clause 2.4 to 2.8) as client-side SQL in explicit
//! transactions with prepared statements, DBT-2's way; amounts travel in cents as int8 so
//! the numeric columns stay exact. They run on the load engine's own connection
//! (`engine::pgwire`): each statement parsed once, each execution one Bind/Execute/Sync.

use std::fmt::Display;

use crate::engine::pgwire::query::{self, Rows, ValueError};
use crate::engine::pgwire::request::Template;
use crate::engine::pgwire::{Conn, SqlError};

use super::params::{CUSTOMERS_PER_DISTRICT, DISTRICTS, ITEMS};
use super::rand::{NuConstants, Rng, last_name};

/// Why a transaction failed: the server's or the connection's error, or a reply that is not
/// what the statement must return (a missing row, a value of another type).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TxnError {
    #[error(transparent)]
    Sql(#[from] SqlError),
    #[error("unexpected reply: {0}")]
    Reply(#[from] ValueError),
}

impl TxnError {
    /// A serialization failure or a deadlock, which the terminal does not report.
    pub fn is_retryable(&self) -> bool {
        matches!(self, TxnError::Sql(e) if e.is_retryable())
    }

    /// The connection failed or closed.
    pub fn is_connection(&self) -> bool {
        matches!(self, TxnError::Sql(SqlError::Connection(_)))
    }
}

/// How a transaction ended when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Committed,
    /// The intended rollback of New-Order (an unused item number).
    RolledBack,
}

const STOCK_UPDATE: &str = "update stock set
      s_quantity = case when s_quantity >= $3::int4 + 10 then s_quantity - $3::int4
                        else s_quantity - $3::int4 + 91 end,
      s_ytd = s_ytd + $3::int4, s_order_cnt = s_order_cnt + 1,
      s_remote_cnt = s_remote_cnt + $4::int4
    where s_i_id = $1 and s_w_id = $2
    returning case $5::int4 when 1 then s_dist_01 when 2 then s_dist_02 when 3 then s_dist_03
      when 4 then s_dist_04 when 5 then s_dist_05 when 6 then s_dist_06 when 7 then s_dist_07
      when 8 then s_dist_08 when 9 then s_dist_09 else s_dist_10 end::text, s_data";

const SQL: [&str; 19] = [
    // 0..=7 New-Order
    "select c_discount::float8, c_last, c_credit, w_tax::float8 from customer, warehouse
     where w_id = $1 and c_w_id = w_id and c_d_id = $2 and c_id = $3",
    "update district set d_next_o_id = d_next_o_id + 1 where d_w_id = $1 and d_id = $2
     returning d_next_o_id - 1, d_tax::float8",
    "insert into orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt,
     o_all_local) values ($1, $2, $3, $4, current_timestamp, null, $5, $6)",
    "insert into new_order (no_o_id, no_d_id, no_w_id) values ($1, $2, $3)",
    "select (i_price * 100)::int8, i_name, i_data from item where i_id = $1",
    STOCK_UPDATE,
    "insert into order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
     ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
     values ($1, $2, $3, $4, $5, $6, null, $7, $8::int8 / 100.0, $9)",
    // 7..=11 Payment
    "update warehouse set w_ytd = w_ytd + $2::int8 / 100.0 where w_id = $1
     returning w_name, w_street_1, w_street_2, w_city, w_state, w_zip",
    "update district set d_ytd = d_ytd + $3::int8 / 100.0 where d_w_id = $1 and d_id = $2
     returning d_name, d_street_1, d_street_2, d_city, d_state, d_zip",
    "update customer set c_balance = c_balance - $4::int8 / 100.0,
       c_ytd_payment = c_ytd_payment + $4::int8 / 100.0, c_payment_cnt = c_payment_cnt + 1
     where c_w_id = $1 and c_d_id = $2 and c_id = $3
     returning c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip,
       c_phone, c_since::text, c_credit, c_credit_lim::text, c_discount::text, c_balance::text",
    "update customer set c_data = substr($4::text || c_data, 1, 500)
     where c_w_id = $1 and c_d_id = $2 and c_id = $3",
    "insert into history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
     values ($1, $2, $3, $4, $5, current_timestamp, $6::int8 / 100.0, $7)",
    // 12..=14 Order-Status (and the by-last-name lookup Payment shares)
    "select c_id from customer where c_w_id = $1 and c_d_id = $2 and c_last = $3
     order by c_first",
    "select c_balance::text, c_first, c_middle, c_last from customer
     where c_w_id = $1 and c_d_id = $2 and c_id = $3",
    "select o_id, o_carrier_id, o_entry_d::text from orders
     where o_w_id = $1 and o_d_id = $2 and o_c_id = $3 order by o_id desc limit 1",
    // 15 order lines of an order (Order-Status)
    "select ol_i_id, ol_supply_w_id, ol_quantity, ol_amount::text, ol_delivery_d::text
     from order_line where ol_w_id = $1 and ol_d_id = $2 and ol_o_id = $3",
    // 16..=18 Delivery
    "delete from new_order where no_w_id = $1 and no_d_id = $2 and no_o_id =
       (select min(no_o_id) from new_order where no_w_id = $1 and no_d_id = $2)
     returning no_o_id",
    "update orders set o_carrier_id = $4 where o_w_id = $1 and o_d_id = $2 and o_id = $3
     returning o_c_id",
    "with l as (update order_line set ol_delivery_d = current_timestamp
                where ol_w_id = $1 and ol_d_id = $2 and ol_o_id = $3 returning ol_amount)
     update customer set c_balance = c_balance + (select coalesce(sum(ol_amount), 0) from l),
       c_delivery_cnt = c_delivery_cnt + 1
     where c_w_id = $1 and c_d_id = $2 and c_id = $4",
];

// Indexes into the prepared statements: SQL, then STOCK_LEVEL.
const NO_CUSTOMER: usize = 0;
const NO_DISTRICT: usize = 1;
const NO_ORDER: usize = 2;
const NO_NEW_ORDER: usize = 3;
const NO_ITEM: usize = 4;
const NO_STOCK: usize = 5;
const NO_LINE: usize = 6;
const P_WAREHOUSE: usize = 7;
const P_DISTRICT: usize = 8;
const P_CUSTOMER: usize = 9;
const P_BC_DATA: usize = 10;
const P_HISTORY: usize = 11;
const BY_LAST_NAME: usize = 12;
const OS_CUSTOMER: usize = 13;
const OS_ORDER: usize = 14;
const OS_LINES: usize = 15;
const D_NEW_ORDER: usize = 16;
const D_ORDER: usize = 17;
const D_LINES_CUSTOMER: usize = 18;
const SL_NEXT: usize = 19;
const SL_COUNT: usize = 20;

const STOCK_LEVEL: [&str; 2] = [
    "select d_next_o_id from district where d_w_id = $1 and d_id = $2",
    "select count(distinct s_i_id) from order_line, stock
     where ol_w_id = $1 and ol_d_id = $2 and ol_o_id < $3 and ol_o_id >= $3 - 20
       and s_w_id = $1 and s_i_id = ol_i_id and s_quantity < $4",
];

/// One terminal's connection, prepared statements and random state.
pub struct Terminal {
    conn: Conn,
    st: Vec<Template>,
    rows: Rows,
    scratch: String,
    pub rng: Rng,
    pub w: i32,
    pub d: i32,
    pub warehouses: i32,
    pub c: NuConstants,
}

/// That the statement returned exactly one row (tokio-postgres's `query_one`).
fn one(rows: &Rows) -> Result<&Rows, TxnError> {
    if rows.len() == 1 {
        Ok(rows)
    } else {
        Err(TxnError::Reply(ValueError {
            row: 0,
            column: 0,
            what: format!(
                "the statement returned {} rows where one was expected",
                rows.len()
            ),
        }))
    }
}

impl Terminal {
    pub async fn prepare(
        mut conn: Conn,
        rng: Rng,
        (w, d, warehouses): (i32, i32, i32),
        c: NuConstants,
    ) -> Result<Terminal, SqlError> {
        let mut st = Vec::with_capacity(SQL.len() + STOCK_LEVEL.len());
        for (i, sql) in SQL.iter().chain(STOCK_LEVEL.iter()).enumerate() {
            st.push(query::prepare(&mut conn, &format!("tpcc_{i}"), sql).await?);
        }
        Ok(Terminal {
            conn,
            st,
            rows: Rows::default(),
            scratch: String::new(),
            rng,
            w,
            d,
            warehouses,
            c,
        })
    }

    /// The connection failed or the server closed it.
    pub fn is_broken(&self) -> bool {
        self.conn.is_broken()
    }

    /// Closes the connection.
    pub async fn close(self) {
        self.conn.close().await;
    }

    /// Runs statement `i` with `values`; its rows stay until the next statement.
    async fn q(&mut self, i: usize, values: &[&(dyn Display + Sync)]) -> Result<&Rows, TxnError> {
        query::query(
            &mut self.conn,
            &self.st[i],
            values,
            &mut self.scratch,
            &mut self.rows,
        )
        .await?;
        Ok(&self.rows)
    }

    /// A warehouse other than the home one (the home one when there is only one).
    fn other_warehouse(&mut self) -> i32 {
        if self.warehouses <= 1 {
            return self.w;
        }
        let o = self.rng.int(1, self.warehouses - 1);
        if o >= self.w { o + 1 } else { o }
    }

    fn c_id(&mut self) -> i32 {
        self.rng
            .nurand(1023, 1, i64::from(CUSTOMERS_PER_DISTRICT), self.c.c_id) as i32
    }

    fn c_last(&mut self) -> String {
        last_name(self.rng.nurand(255, 0, 999, self.c.c_last))
    }

    pub async fn exec(&mut self, sql: &str) -> Result<(), TxnError> {
        Ok(query::simple(&mut self.conn, sql).await?)
    }

    /// The middle customer (ceil(n/2), 1-based) of those with `last`, ordered by c_first.
    async fn by_last_name(&mut self, w: i32, d: i32, last: &str) -> Result<Option<i32>, TxnError> {
        let rows = self.q(BY_LAST_NAME, &[&w, &d, &last]).await?;
        if rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(rows.int(rows.len().saturating_sub(1) / 2, 0)? as i32))
    }

    /// New-Order (clause 2.4): 5..15 lines, 1% remote supply, 1% rolled back.
    pub async fn new_order(&mut self) -> Result<Outcome, TxnError> {
        let (w, d, c) = (self.w, self.rng.int(1, DISTRICTS), self.c_id());
        let n = self.rng.int(5, 15);
        let rollback = self.rng.int(1, 100) == 1;
        let mut lines: Vec<(i32, i32, i32)> = (0..n)
            .map(|i| {
                let item = if rollback && i == n - 1 {
                    ITEMS + 1
                } else {
                    self.rng.nurand(8191, 1, i64::from(ITEMS), self.c.ol_i_id) as i32
                };
                let supply = if self.warehouses > 1 && self.rng.int(1, 100) == 1 {
                    self.other_warehouse()
                } else {
                    w
                };
                (supply, item, self.rng.int(1, 10))
            })
            .collect();
        // Stock rows in one order, so concurrent New-Orders do not deadlock.
        lines.sort_unstable();
        let all_local = i32::from(lines.iter().all(|l| l.0 == w));
        self.exec("begin").await?;
        let cust = one(self.q(NO_CUSTOMER, &[&w, &d, &c]).await?)?;
        let (discount, w_tax) = (cust.float(0, 0)?, cust.float(0, 3)?);
        let dist = one(self.q(NO_DISTRICT, &[&w, &d]).await?)?;
        let (o_id, d_tax) = (dist.int(0, 0)?, dist.float(0, 1)?);
        self.q(NO_ORDER, &[&o_id, &d, &w, &c, &n, &all_local])
            .await?;
        self.q(NO_NEW_ORDER, &[&o_id, &d, &w]).await?;
        let mut total_cents = 0i64;
        let mut dist_info = String::new();
        for (number, &(supply, item, qty)) in (1i32..).zip(&lines) {
            let it = self.q(NO_ITEM, &[&item]).await?;
            if it.is_empty() {
                self.exec("rollback").await?;
                return Ok(Outcome::RolledBack);
            }
            let price = it.int(0, 0)?;
            let remote = i32::from(supply != w);
            let s = one(self
                .q(NO_STOCK, &[&item, &supply, &qty, &remote, &d])
                .await?)?;
            dist_info.clear();
            dist_info.push_str(s.text(0, 0)?.unwrap_or_default());
            let amount = i64::from(qty) * price;
            total_cents += amount;
            self.q(
                NO_LINE,
                &[
                    &o_id, &d, &w, &number, &item, &supply, &qty, &amount, &dist_info,
                ],
            )
            .await?;
        }
        let total = total_cents as f64 / 100.0 * (1.0 - discount) * (1.0 + w_tax + d_tax);
        std::hint::black_box(total);
        self.exec("commit").await?;
        Ok(Outcome::Committed)
    }

    /// Payment (clause 2.5): 60% by last name, 15% remote customer, BC credit data.
    pub async fn payment(&mut self) -> Result<Outcome, TxnError> {
        let (w, d) = (self.w, self.rng.int(1, DISTRICTS));
        let (c_w, c_d) = if self.warehouses > 1 && self.rng.int(1, 100) > 85 {
            (self.other_warehouse(), self.rng.int(1, DISTRICTS))
        } else {
            (w, d)
        };
        let by_last = self.rng.int(1, 100) <= 60;
        let (last, mut c_id) = (self.c_last(), self.c_id());
        let amount = self.rng.uniform(100, 500_000);
        self.exec("begin").await?;
        let wr = one(self.q(P_WAREHOUSE, &[&w, &amount]).await?)?;
        let w_name = wr.text(0, 0)?.unwrap_or_default().to_string();
        let dr = one(self.q(P_DISTRICT, &[&w, &d, &amount]).await?)?;
        let d_name = dr.text(0, 0)?.unwrap_or_default().to_string();
        if by_last && let Some(id) = self.by_last_name(c_w, c_d, &last).await? {
            c_id = id;
        }
        let cr = one(self.q(P_CUSTOMER, &[&c_w, &c_d, &c_id, &amount]).await?)?;
        if cr.text(0, 10)? == Some("BC") {
            let data = format!("{c_id} {c_d} {c_w} {d} {w} {amount} | ");
            self.q(P_BC_DATA, &[&c_w, &c_d, &c_id, &data]).await?;
        }
        let h_data = format!("{w_name}    {d_name}");
        self.q(P_HISTORY, &[&c_id, &c_d, &c_w, &d, &w, &amount, &h_data])
            .await?;
        self.exec("commit").await?;
        Ok(Outcome::Committed)
    }

    /// Order-Status (clause 2.6): 60% by last name; the customer's last order and its lines.
    pub async fn order_status(&mut self) -> Result<Outcome, TxnError> {
        let (w, d) = (self.w, self.rng.int(1, DISTRICTS));
        let by_last = self.rng.int(1, 100) <= 60;
        let (last, mut c_id) = (self.c_last(), self.c_id());
        self.exec("begin").await?;
        if by_last && let Some(id) = self.by_last_name(w, d, &last).await? {
            c_id = id;
        }
        self.q(OS_CUSTOMER, &[&w, &d, &c_id]).await?;
        let o = self.q(OS_ORDER, &[&w, &d, &c_id]).await?;
        if !o.is_empty() {
            let o_id = o.int(0, 0)?;
            self.q(OS_LINES, &[&w, &d, &o_id]).await?;
        }
        self.exec("commit").await?;
        Ok(Outcome::Committed)
    }

    /// Delivery (clause 2.7), all ten districts in one transaction as DBT-2 does.
    pub async fn delivery(&mut self) -> Result<Outcome, TxnError> {
        let w = self.w;
        let carrier = self.rng.int(1, 10);
        self.exec("begin").await?;
        for d in 1..=DISTRICTS {
            let no = self.q(D_NEW_ORDER, &[&w, &d]).await?;
            if no.is_empty() {
                continue;
            }
            let o_id = no.int(0, 0)?;
            let o = self.q(D_ORDER, &[&w, &d, &o_id, &carrier]).await?;
            if o.is_empty() {
                continue;
            }
            let c_id = o.int(0, 0)?;
            self.q(D_LINES_CUSTOMER, &[&w, &d, &o_id, &c_id]).await?;
        }
        self.exec("commit").await?;
        Ok(Outcome::Committed)
    }

    /// Stock-Level (clause 2.8): distinct items of the district's last 20 orders whose
    /// stock is under a threshold of 10..20.
    pub async fn stock_level(&mut self) -> Result<Outcome, TxnError> {
        let (w, d) = (self.w, self.d);
        let threshold = self.rng.int(10, 20);
        self.exec("begin").await?;
        let next = one(self.q(SL_NEXT, &[&w, &d]).await?)?.int(0, 0)?;
        one(self.q(SL_COUNT, &[&w, &d, &next, &threshold]).await?)?;
        self.exec("commit").await?;
        Ok(Outcome::Committed)
    }
}
