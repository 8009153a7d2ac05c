//! The consistency conditions of clause 3.3.2 (1 to 10 and 12), each as a query returning
//! one text line per violating row. Condition 11 (orders minus new orders = 2100 per district)
//! holds only for the initial population, so it is not checked after a run.

use tokio_postgres::Client;

use crate::error::WorkerError;

/// What a condition's count is over, for the note.
#[derive(Clone, Copy)]
enum Scope {
    Warehouses,
    Districts,
    Customers,
}

/// (number, statement, scope, query returning the violating rows as a `bad` text column).
const CONDITIONS: [(u32, &str, Scope, &str); 11] = [
    (
        1,
        "W_YTD = sum(D_YTD)",
        Scope::Warehouses,
        "select format('w_id=%s w_ytd=%s sum(d_ytd)=%s', w_id, w_ytd, s) as bad
         from warehouse left join (select d_w_id, sum(d_ytd) as s from district group by d_w_id) d
           on d.d_w_id = w_id
         where w_ytd is distinct from s",
    ),
    (
        2,
        "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)",
        Scope::Districts,
        "select format('w_id=%s d_id=%s d_next_o_id-1=%s max(o_id)=%s max(no_o_id)=%s',
                       d_w_id, d_id, d_next_o_id - 1, o.m, n.m) as bad
         from district
         left join (select o_w_id, o_d_id, max(o_id) as m from orders group by 1, 2) o
           on o.o_w_id = d_w_id and o.o_d_id = d_id
         left join (select no_w_id, no_d_id, max(no_o_id) as m from new_order group by 1, 2) n
           on n.no_w_id = d_w_id and n.no_d_id = d_id
         where d_next_o_id - 1 is distinct from o.m
            or (n.m is not null and n.m <> d_next_o_id - 1)",
    ),
    (
        3,
        "max(NO_O_ID) - min(NO_O_ID) + 1 = count(NEW_ORDER)",
        Scope::Districts,
        "select format('w_id=%s d_id=%s max(no_o_id)=%s min(no_o_id)=%s count=%s',
                       no_w_id, no_d_id, max(no_o_id), min(no_o_id), count(*)) as bad
         from new_order group by no_w_id, no_d_id
         having max(no_o_id) - min(no_o_id) + 1 <> count(*)",
    ),
    (
        4,
        "sum(O_OL_CNT) = count(ORDER_LINE)",
        Scope::Districts,
        "select format('w_id=%s d_id=%s sum(o_ol_cnt)=%s count(order_line)=%s', w, d, s, c) as bad
         from (select o_w_id as w, o_d_id as d, sum(o_ol_cnt) as s from orders group by 1, 2) o
         full join (select ol_w_id as w, ol_d_id as d, count(*) as c from order_line group by 1, 2) l
           using (w, d)
         where s is distinct from c",
    ),
    (
        5,
        "O_CARRIER_ID is null iff a NEW_ORDER row exists",
        Scope::Districts,
        "select format('w_id=%s d_id=%s o_id=%s o_carrier_id=%s new_order=%s',
                       o_w_id, o_d_id, o_id, o_carrier_id, no_o_id is not null) as bad
         from orders left join new_order
           on no_w_id = o_w_id and no_d_id = o_d_id and no_o_id = o_id
         where (o_carrier_id is null) <> (no_o_id is not null)",
    ),
    (
        6,
        "O_OL_CNT = count(ORDER_LINE) per order",
        Scope::Districts,
        "select format('w_id=%s d_id=%s o_id=%s o_ol_cnt=%s lines=%s',
                       o_w_id, o_d_id, o_id, o_ol_cnt, coalesce(c, 0)) as bad
         from orders left join
           (select ol_w_id, ol_d_id, ol_o_id, count(*) as c from order_line group by 1, 2, 3) l
           on ol_w_id = o_w_id and ol_d_id = o_d_id and ol_o_id = o_id
         where o_ol_cnt <> coalesce(c, 0)",
    ),
    (
        7,
        "OL_DELIVERY_D is null iff O_CARRIER_ID is null",
        Scope::Districts,
        "select format('w_id=%s d_id=%s o_id=%s ol_number=%s ol_delivery_d=%s o_carrier_id=%s',
                       ol_w_id, ol_d_id, ol_o_id, ol_number, ol_delivery_d, o_carrier_id) as bad
         from order_line join orders
           on o_w_id = ol_w_id and o_d_id = ol_d_id and o_id = ol_o_id
         where (ol_delivery_d is null) <> (o_carrier_id is null)",
    ),
    (
        8,
        "W_YTD = sum(H_AMOUNT)",
        Scope::Warehouses,
        "select format('w_id=%s w_ytd=%s sum(h_amount)=%s', w_id, w_ytd, s) as bad
         from warehouse left join (select h_w_id, sum(h_amount) as s from history group by 1) h
           on h.h_w_id = w_id
         where w_ytd is distinct from s",
    ),
    (
        9,
        "D_YTD = sum(H_AMOUNT)",
        Scope::Districts,
        "select format('w_id=%s d_id=%s d_ytd=%s sum(h_amount)=%s', d_w_id, d_id, d_ytd, s) as bad
         from district left join
           (select h_w_id, h_d_id, sum(h_amount) as s from history group by 1, 2) h
           on h.h_w_id = d_w_id and h.h_d_id = d_id
         where d_ytd is distinct from s",
    ),
    (
        10,
        "C_BALANCE = sum(delivered OL_AMOUNT) - sum(H_AMOUNT)",
        Scope::Customers,
        "select format('w_id=%s d_id=%s c_id=%s c_balance=%s delivered=%s paid=%s',
                       c_w_id, c_d_id, c_id, c_balance, coalesce(ol.s, 0), coalesce(h.s, 0)) as bad
         from customer
         left join (select o_w_id, o_d_id, o_c_id, sum(ol_amount) as s
                    from orders join order_line
                      on ol_w_id = o_w_id and ol_d_id = o_d_id and ol_o_id = o_id
                    where ol_delivery_d is not null group by 1, 2, 3) ol
           on ol.o_w_id = c_w_id and ol.o_d_id = c_d_id and ol.o_c_id = c_id
         left join (select h_c_w_id, h_c_d_id, h_c_id, sum(h_amount) as s
                    from history group by 1, 2, 3) h
           on h.h_c_w_id = c_w_id and h.h_c_d_id = c_d_id and h.h_c_id = c_id
         where c_balance <> coalesce(ol.s, 0) - coalesce(h.s, 0)",
    ),
    (
        12,
        "C_BALANCE + C_YTD_PAYMENT = sum(delivered OL_AMOUNT)",
        Scope::Customers,
        "select format('w_id=%s d_id=%s c_id=%s c_balance=%s c_ytd_payment=%s delivered=%s',
                       c_w_id, c_d_id, c_id, c_balance, c_ytd_payment, coalesce(ol.s, 0)) as bad
         from customer
         left join (select o_w_id, o_d_id, o_c_id, sum(ol_amount) as s
                    from orders join order_line
                      on ol_w_id = o_w_id and ol_d_id = o_d_id and ol_o_id = o_id
                    where ol_delivery_d is not null group by 1, 2, 3) ol
           on ol.o_w_id = c_w_id and ol.o_d_id = c_d_id and ol.o_c_id = c_id
         where c_balance + c_ytd_payment <> coalesce(ol.s, 0)",
    ),
];

/// Checks every condition; the notes say one line each. Fails naming every failing
/// condition with an example row.
pub async fn check(
    client: &Client,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Vec<String>, WorkerError> {
    let counts = client
        .query_one(
            "select (select count(*) from warehouse), (select count(*) from district),
                    (select count(*) from customer)",
            &[],
        )
        .await
        .map_err(|e| WorkerError::sql("counting warehouses and districts", &e))?;
    let (warehouses, districts, customers): (i64, i64, i64) =
        (counts.get(0), counts.get(1), counts.get(2));
    if warehouses == 0 {
        return Err(WorkerError::Run(
            "tpcc check: the warehouse table is empty (load the data first)".into(),
        ));
    }
    let mut notes = Vec::new();
    let mut failed = Vec::new();
    for (n, what, scope, sql) in CONDITIONS {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(WorkerError::Run("cancelled".into()));
        }
        let q = format!("with f as ({sql}) select count(*), min(bad) from f");
        let row = client
            .query_one(&q, &[])
            .await
            .map_err(|e| WorkerError::sql(format!("checking condition {n}"), &e))?;
        let bad: i64 = row.get(0);
        let example: Option<String> = row.get(1);
        let scope = match scope {
            Scope::Warehouses => format!("{warehouses} warehouses"),
            Scope::Districts => format!("{districts} districts"),
            Scope::Customers => format!("{customers} customers"),
        };
        if bad == 0 {
            notes.push(format!("condition {n} ({what}): ok ({scope})"));
        } else {
            let example = example.unwrap_or_default();
            let line = format!("condition {n} ({what}): {bad} violations, e.g. {example}");
            tracing::warn!(condition = n, violations = bad, %example, "tpcc consistency condition failed");
            notes.push(line.clone());
            failed.push(line);
        }
    }
    if failed.is_empty() {
        Ok(notes)
    } else {
        Err(WorkerError::Run(format!(
            "tpcc consistency check failed: {}",
            failed.join("; ")
        )))
    }
}
