//! OSDB's single-user query list: AS3AP's statements in the order OSDB's
//! `singleUserTests` runs them.

use super::schema::{self, COLUMNS};

/// What a query does, and how its outcome is counted.
pub enum Op {
    /// Rows returned (fetched to the client, as OSDB's cursor loop does).
    Select(String),
    /// Rows inserted, updated or deleted.
    Dml(String),
    /// Schema change; no rows.
    Ddl(String),
    /// A statement the database must refuse with this SQLSTATE.
    Refused(String, &'static str),
    /// Several steps timed together.
    Steps(Vec<Op>),
}

pub struct Query {
    pub name: String,
    pub op: Op,
}

pub const PROJ6: &str = "select col_key, col_int, col_signed, col_code, col_double, col_name";
const ALICE: &str = "50005, 50005.00, 50005.00, 50005.00, '1988-01-01', 'CONTROLLER', 'ALICE IN WONDERLAND', \
     'UNIVERSITY OF ILLINOIS AT CHICAGO'";

/// AS3AP's simple report: the average decimal of the updates rows joined to hundred
/// above a threshold (also a cross-section test).
pub const AGG_SIMPLE_REPORT: &str = "select avg(updates.col_decim) from updates where updates.col_key in (select updates.col_key from updates, hundred where hundred.col_key = updates.col_key and updates.col_decim > 980000000)";

/// One row of updates by its non-clustered code (also a cross-section test).
pub fn sel_1_ncl() -> String {
    format!("{PROJ6} from updates where col_code = 'BENCHMARKS'")
}

fn q(name: &str, op: Op) -> Query {
    Query {
        name: name.to_string(),
        op,
    }
}

fn sel(s: &str) -> Op {
    Op::Select(s.to_string())
}

fn dml(s: &str) -> Op {
    Op::Dml(s.to_string())
}

fn ddl(s: &str) -> Op {
    Op::Ddl(s.to_string())
}

/// The keys OSDB's update tests use (bulk range 5000..5999, duplicate 6000, middle
/// 5005), scaled down for tables of fewer than 10000 rows so they stay inside the table.
pub struct Keys {
    pub lo: u64,
    pub hi: u64,
    pub dup: u64,
    pub mid: u64,
}

impl Keys {
    pub fn for_rows(rows: u64) -> Keys {
        let lo = 5000.min(rows / 2);
        let width = 1000.min(rows / 10);
        Keys {
            lo,
            hi: lo + width - 1,
            dup: lo + width,
            mid: lo + 5,
        }
    }
}

/// OSDB's single-user list (`singleUserTests`), exactly its 46 tests in its order.
/// Repeated tests get a `_2`, `_3` suffix.
pub fn single_user_list(rows: u64) -> Vec<Query> {
    let Keys { lo, hi, dup, mid } = Keys::for_rows(rows);
    let app_mid = format!("insert into updates values ({mid}, {mid}, {ALICE})");
    let mod_mid = format!("update updates set col_key = -5000 where col_key = {mid}");
    let del_mid = format!("delete from updates where (col_key = {mid}) or (col_key = -5000)");
    let join3 = "select uniques.col_signed, uniques.col_date, hundred.col_signed, hundred.col_date, \
                 tenpct.col_signed, tenpct.col_date from uniques, hundred, tenpct";
    let join4 = "select uniques.col_date, hundred.col_date, tenpct.col_date, updates.col_date \
                 from uniques, hundred, tenpct, updates";
    let join2 = "select uniques.col_signed, uniques.col_name, hundred.col_signed, hundred.col_name \
                 from uniques, hundred";
    let report = "select avg(col_signed), min(col_signed), max(col_signed), max(col_date), \
                  min(col_date), count(distinct col_name), count(col_name)";
    vec![
        q(
            "sel_1_cl",
            sel(&format!("{PROJ6} from updates where col_key = 1000")),
        ),
        q(
            "join_3_cl",
            sel(&format!(
                "{join3} where uniques.col_key = hundred.col_key and uniques.col_key = tenpct.col_key and uniques.col_key = 1000"
            )),
        ),
        q(
            "sel_100_ncl",
            sel(&format!("{PROJ6} from updates where col_int <= 100")),
        ),
        q("table_scan", sel("select * from uniques where col_int = 1")),
        q(
            "agg_func",
            sel("select min(col_key) from hundred group by col_name"),
        ),
        q("agg_scal", sel("select min(col_key) from uniques")),
        q(
            "sel_100_cl",
            sel(&format!("{PROJ6} from updates where col_key <= 100")),
        ),
        q(
            "join_3_ncl",
            sel(&format!(
                "{join3} where uniques.col_code = hundred.col_code and uniques.col_code = tenpct.col_code and uniques.col_code = 'BENCHMARKS'"
            )),
        ),
        q(
            "sel_10pct_ncl",
            sel(&format!(
                "{PROJ6} from tenpct where col_name = 'THE+ASAP+BENCHMARKS+'"
            )),
        ),
        q("agg_simple_report", sel(AGG_SIMPLE_REPORT)),
        q(
            "agg_info_retrieval",
            sel(
                "select count(col_key) from tenpct where col_name = 'THE+ASAP+BENCHMARKS+' and col_int <= 100000000 and col_signed between 1 and 99999999 and not (col_float between -450000000 and 450000000) and col_double > 600000000 and col_decim < -600000000",
            ),
        ),
        q(
            "agg_create_view",
            ddl(
                "create view reportview (col_key, col_signed, col_date, col_decim, col_name, col_code, col_int) as select updates.col_key, updates.col_signed, updates.col_date, updates.col_decim, hundred.col_name, hundred.col_code, hundred.col_int from updates, hundred where updates.col_key = hundred.col_key",
            ),
        ),
        q(
            "agg_subtotal_report",
            sel(&format!(
                "{report}, col_code, col_int from reportview where col_decim > 980000000 group by col_code, col_int"
            )),
        ),
        q(
            "agg_total_report",
            sel(&format!(
                "{report}, count(col_code), count(col_int) from reportview where col_decim > 980000000"
            )),
        ),
        q(
            "join_2_cl",
            sel(&format!(
                "{join2} where uniques.col_key = hundred.col_key and uniques.col_key = 1000"
            )),
        ),
        q(
            "join_2",
            sel(&format!(
                "{join2} where uniques.col_address = hundred.col_address and uniques.col_address = 'SILICON VALLEY'"
            )),
        ),
        q(
            "sel_variable_select_low",
            sel(&format!(
                "{PROJ6} from tenpct where col_signed < -500000000"
            )),
        ),
        q(
            "sel_variable_select_high",
            sel(&format!(
                "{PROJ6} from tenpct where col_signed < -250000000"
            )),
        ),
        q(
            "join_4_cl",
            sel(&format!(
                "{join4} where uniques.col_key = hundred.col_key and uniques.col_key = tenpct.col_key and uniques.col_key = updates.col_key and uniques.col_key = 1000"
            )),
        ),
        q(
            "proj_100",
            sel("select distinct col_address, col_signed from hundred"),
        ),
        q(
            "join_4_ncl",
            sel(&format!(
                "{join4} where uniques.col_code = hundred.col_code and uniques.col_code = tenpct.col_code and uniques.col_code = updates.col_code and uniques.col_code = 'BENCHMARKS'"
            )),
        ),
        q("proj_10pct", sel("select distinct col_signed from tenpct")),
        q("sel_1_ncl", sel(&sel_1_ncl())),
        q(
            "join_2_ncl",
            sel(&format!(
                "{join2} where uniques.col_code = hundred.col_code and uniques.col_code = 'BENCHMARKS'"
            )),
        ),
        q(
            "integrity_test",
            Op::Steps(vec![
                ddl(&format!("create table integrity_temp ({COLUMNS})")),
                dml("insert into integrity_temp select * from hundred where col_int = 0"),
                Op::Refused(
                    "update hundred set col_signed = -500000000 where col_int = 0".into(),
                    "23503",
                ),
                dml("delete from hundred where col_int = 0"),
                dml("insert into hundred select * from integrity_temp"),
                ddl("drop table integrity_temp"),
            ]),
        ),
        q(
            "drop_updates_keys",
            ddl(
                "drop index updates_int_bt; drop index updates_double_bt; drop index updates_decim_bt; drop index updates_code_h",
            ),
        ),
        q(
            "bulk_save",
            Op::Steps(vec![
                ddl(&format!("create table saveupdates ({COLUMNS})")),
                dml(&format!(
                    "insert into saveupdates select * from updates where col_key between {lo} and {hi}"
                )),
            ]),
        ),
        q(
            "bulk_modify",
            dml(&format!(
                "update updates set col_key = col_key - 100000 where col_key between {lo} and {hi}"
            )),
        ),
        q(
            "upd_append_duplicate",
            Op::Refused(
                format!(
                    "insert into updates values ({dup}, 0, 60000, 39997.90, 50005.00, 50005.00, '1985-11-10', 'CONTROLLER', 'ALICE IN WONDERLAND', 'UNIVERSITY OF ILLINOIS AT CHICAGO')"
                ),
                "23505",
            ),
        ),
        q(
            "upd_remove_duplicate",
            dml(&format!(
                "delete from updates where col_key = {dup} and col_int = 0"
            )),
        ),
        q("upd_app_t_mid", dml(&app_mid)),
        q("upd_mod_t_mid", dml(&mod_mid)),
        q("upd_del_t_mid", dml(&del_mid)),
        q(
            "upd_app_t_end",
            dml(&format!(
                "insert into updates values (1000000001, 50005, {ALICE})"
            )),
        ),
        q(
            "upd_mod_t_end",
            dml("update updates set col_key = -1000 where col_key = 1000000001"),
        ),
        q(
            "upd_del_t_end",
            dml("delete from updates where col_key = -1000"),
        ),
        q("create_idx_updates_code_h", ddl(schema::UPDATES_CODE_H)),
        q("upd_app_t_mid_2", dml(&app_mid)),
        q(
            "upd_mod_t_cod",
            dml(&format!(
                "update updates set col_code = 'SQL+GROUPS' where col_key = {mid}"
            )),
        ),
        q("upd_del_t_mid_2", dml(&del_mid)),
        q("create_idx_updates_int_bt", ddl(schema::UPDATES_INT_BT)),
        q("upd_app_t_mid_3", dml(&app_mid)),
        q(
            "upd_mod_t_int",
            dml(&format!(
                "update updates set col_int = 50015 where col_key = {mid}"
            )),
        ),
        q("upd_del_t_mid_3", dml(&del_mid)),
        q(
            "bulk_append",
            dml("insert into updates select * from saveupdates"),
        ),
        q("bulk_delete", dml("delete from updates where col_key < 0")),
    ]
}
