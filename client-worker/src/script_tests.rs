use super::*;
use rand::SeedableRng;
use rand::rngs::SmallRng;

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
fn tpcb_parses_into_commands_and_params() {
    let s = Builtin::TpcbLike.script();
    assert!(s.transactional);
    let names: Vec<&str> = s.vars.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["aid", "bid", "tid", "delta"]);
    assert_eq!(s.commands.len(), 7);
    assert_eq!(s.commands[0].param_sql, "BEGIN;");
    assert_eq!(
        s.commands[1].param_sql,
        "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;"
    );
    assert_eq!(s.commands[1].params, [3, 0]);
    assert_eq!(
        s.commands[5].param_sql,
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);"
    );
    assert_eq!(s.commands[5].params, [2, 1, 0, 3]);
    assert!(!Builtin::SelectOnly.script().transactional);
}

#[test]
fn simple_protocol_interpolates_like_pgbench() {
    let s = Builtin::TpcbLike.script();
    let mut out = String::new();
    s.commands[1].interpolate(&[42, 1, 7, -123], &mut out);
    assert_eq!(
        out,
        "UPDATE pgbench_accounts SET abalance = abalance + -123 WHERE aid = 42;"
    );
    out.clear();
    s.commands[5].interpolate(&[42, 1, 7, -123], &mut out);
    assert_eq!(
        out,
        "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (7, 1, 42, -123, CURRENT_TIMESTAMP);"
    );
}

#[test]
fn random_variables_stay_in_pgbench_ranges() {
    let s = Builtin::TpcbLike.script();
    let mut rng = SmallRng::seed_from_u64(7);
    let mut v = [0i64; 4];
    let (mut seen_lo, mut seen_hi) = (false, false);
    for _ in 0..200_000 {
        s.draw(&mut rng, 3, &mut v);
        assert!((1..=300_000).contains(&v[0]), "aid {}", v[0]);
        assert!((1..=3).contains(&v[1]), "bid {}", v[1]);
        assert!((1..=30).contains(&v[2]), "tid {}", v[2]);
        assert!((-5000..=5000).contains(&v[3]), "delta {}", v[3]);
        seen_lo |= v[1] == 1 && v[3] == -5000;
        seen_hi |= v[2] == 30;
    }
    assert!(seen_lo && seen_hi, "bounds are inclusive");
}

#[test]
fn aid_becomes_bigint_only_past_int32() {
    let s = Builtin::SelectOnly.script();
    assert!(!s.var_is_bigint(0, 10));
    assert!(!s.var_is_bigint(0, 21_474));
    assert!(s.var_is_bigint(0, 21_475));
}

#[test]
fn parse_rejects_unknown_variables_and_keeps_casts() {
    assert!(Script::parse("SELECT :nope;\n").is_err());
    let s = Script::parse("\\set x random(1, 5)\nSELECT :x::int, 'a:b';\n").unwrap();
    assert_eq!(s.commands[0].param_sql, "SELECT $1::int, 'a:b';");
}
