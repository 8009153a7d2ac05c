use super::*;

// Transcribed from pgbench.c (PostgreSQL 15) builtin_script[], with
// CppAsString2(naccounts/nbranches/ntellers) expanded to 100000 / 1 / 10.
const PG_TPCB: &str = concat!(
    "\\set aid random(1, 100000 * :scale)\n",
    "\\set bid random(1, 1 * :scale)\n",
    "\\set tid random(1, 10 * :scale)\n",
    "\\set delta random(-5000, 5000)\n",
    "BEGIN;\n",
    "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n",
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n",
    "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n",
    "END;\n"
);
const PG_SIMPLE_UPDATE: &str = concat!(
    "\\set aid random(1, 100000 * :scale)\n",
    "\\set bid random(1, 1 * :scale)\n",
    "\\set tid random(1, 10 * :scale)\n",
    "\\set delta random(-5000, 5000)\n",
    "BEGIN;\n",
    "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n",
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n",
    "END;\n"
);
const PG_SELECT_ONLY: &str = concat!(
    "\\set aid random(1, 100000 * :scale)\n",
    "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"
);

#[test]
fn builtin_text_matches_pgbench() {
    assert_eq!(Builtin::TpcbLike.script_text(), PG_TPCB);
    assert_eq!(Builtin::SimpleUpdate.script_text(), PG_SIMPLE_UPDATE);
    assert_eq!(Builtin::SelectOnly.script_text(), PG_SELECT_ONLY);
}

#[test]
fn builtin_names_and_prefixes() {
    assert_eq!("tpcb-like".parse::<Builtin>(), Ok(Builtin::TpcbLike));
    assert_eq!("select".parse::<Builtin>(), Ok(Builtin::SelectOnly));
    assert_eq!("simple".parse::<Builtin>(), Ok(Builtin::SimpleUpdate));
    assert_eq!("".parse::<Builtin>(), Ok(Builtin::TpcbLike));
    assert!("s".parse::<Builtin>().is_err());
    assert!("tpcc".parse::<Builtin>().is_err());
    assert_eq!("prepared".parse::<Protocol>(), Ok(Protocol::Prepared));
    assert!("binary".parse::<Protocol>().is_err());
}

#[test]
fn builtins_parse_through_the_script_parser() {
    use crate::parse::{Command, parse_script};
    use crate::vars::Symbols;
    let mut sy = Symbols::default();
    let s = parse_script("builtin", Builtin::TpcbLike.script_text(), &mut sy).unwrap();
    assert_eq!(s.steps.len(), 11);
    let Command::Sql(c) = &s.steps[5].command else {
        panic!("{:?}", s.steps[5])
    };
    assert_eq!(
        c.param_sql,
        "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;"
    );
    assert_eq!(c.params, [sy.get("delta").unwrap(), sy.get("aid").unwrap()]);
    let Command::Sql(c) = &s.steps[9].command else {
        panic!()
    };
    assert_eq!(
        c.param_sql,
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);"
    );
    for b in Builtin::ALL {
        parse_script(b.name(), b.script_text(), &mut sy).unwrap();
    }
}
