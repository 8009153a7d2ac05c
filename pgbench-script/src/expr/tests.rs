use super::*;
use crate::prng::PgPrng;
use crate::vars::{Symbols, Variables, format_g15};

mod cases;

fn show(v: Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Int(i) => format!("int {i}"),
        Value::Double(d) => format!("double {}", format_g15(d)),
    }
}

/// Parses and evaluates `debug(EXPR)` as pgbench would with `--random-seed=1`, one client.
fn run(expr: &str) -> (String, Vec<String>) {
    let line = format!("\\set r debug({expr})");
    let mut sy = Symbols::default();
    let e = match parse_expr(&line, 7, &mut sy) {
        Ok(e) => e,
        Err(e) => return (e.msg, vec![]),
    };
    let mut base = PgPrng::seed(1);
    let mut rng = PgPrng::seed(base.next_u64());
    let default_seed = base.next_u64() as i64;
    let mut vars = Variables::new(sy.clone());
    if let Some(id) = sy.get("default_seed") {
        vars.set_value(id, Value::Int(default_seed));
    }
    let mut out = Vec::new();
    let mut cx = EvalCtx {
        vars: &mut vars,
        rng: &mut rng,
        position: (0, 1),
        debug_out: Some(&mut out),
    };
    match e.eval(&mut cx) {
        Ok(v) => (show(v), out),
        Err(err) => (format!("error: {}", err.0), out),
    }
}

#[test]
fn expressions_match_real_pgbench() {
    let mut bad = Vec::new();
    for (expr, want) in cases::CASES {
        let (got, debug) = run(expr);
        if got != *want {
            bad.push(format!("{expr}: got {got:?}, pgbench {want:?}"));
        } else if !debug.is_empty() {
            assert_eq!(
                debug.last().map(String::as_str),
                Some(&*format!("debug(script=0,command=1): {want}"))
            );
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(cases::CASES.len() > 100);
}

#[test]
fn precedence_shapes() {
    let mut sy = Symbols::default();
    let p = |s: &str, sy: &mut Symbols| parse_expr(s, 0, sy).unwrap();
    // NOT binds looser than comparison, tighter than AND.
    assert_eq!(
        p("not 1 = 2 and true", &mut sy),
        p("(not (1 = 2)) and true", &mut sy)
    );
    // IS binds looser than comparisons: (a = b) IS NULL.
    assert_eq!(p("1 = 2 is null", &mut sy), p("(1 = 2) is null", &mut sy));
    // Bit operators share one level, left-associative, below + and -.
    assert_eq!(
        p("1 | 2 & 3 << 1 + 1", &mut sy),
        p("((1 | 2) & 3) << (1 + 1)", &mut sy)
    );
    assert_eq!(p(":a > :b", &mut sy), p(":b < :a", &mut sy));
    let x = sy.get("a").unwrap();
    assert_eq!(p(":a", &mut sy), Expr::Var(x));
    // hash() with one argument takes :default_seed.
    let e = p("hash(1)", &mut sy);
    let ds = sy.get("default_seed").unwrap();
    assert_eq!(
        e,
        Expr::Call(
            Func::HashMurmur2,
            vec![Expr::Const(Value::Int(1)), Expr::Var(ds)]
        )
    );
    assert_eq!(
        p("PERMUTE(1, 2)", &mut sy),
        Expr::Call(
            Func::Permute,
            vec![
                Expr::Const(Value::Int(1)),
                Expr::Const(Value::Int(2)),
                Expr::Var(ds)
            ]
        )
    );
}

#[test]
fn errors_carry_pgbench_columns() {
    let mut sy = Symbols::default();
    let err = |line: &str, sy: &mut Symbols| parse_expr(line, 7, sy).unwrap_err();
    // Columns checked against pgbench's caret (0-based offsets here).
    let e = err("\\set x 1 +", &mut sy);
    assert_eq!((e.msg.as_str(), e.offset), ("syntax error", 10));
    let e = err("\\set x foo(1)", &mut sy);
    assert_eq!(
        (e.msg.as_str(), e.more.as_deref(), e.offset),
        ("unexpected function name", Some("foo"), 9)
    );
    let e = err("\\set x random(1)", &mut sy);
    assert_eq!(
        (e.msg.as_str(), e.more.as_deref(), e.offset),
        ("unexpected number of arguments", Some("random"), 15)
    );
    let e = err("\\set x 1 < 2 < 3", &mut sy);
    assert_eq!((e.msg.as_str(), e.offset), ("syntax error", 13));
    let e = err("\\set x 99999999999999999999", &mut sy);
    assert_eq!((e.msg.as_str(), e.offset), ("bigint constant overflow", 26));
    let e = err("\\set x $", &mut sy);
    assert_eq!(
        (e.msg.as_str(), e.more.as_deref(), e.offset),
        ("unexpected character", Some("$"), 7)
    );
    let e = err("\\set x (1", &mut sy);
    assert_eq!((e.msg.as_str(), e.offset), ("syntax error", 9));
    let e = err("\\set x least()", &mut sy);
    assert_eq!(e.msg, "at least one argument expected");
    let e = err("\\set x hash(1, 2, 3)", &mut sy);
    assert_eq!(e.msg, "unexpected number of arguments");
    let e = err("\\set x 1 2", &mut sy);
    assert_eq!((e.msg.as_str(), e.offset), ("syntax error", 9));
    let e = err("\\set x 9223372036854775808", &mut sy);
    assert_eq!(e.msg, "syntax error");
    // Continuation lines are whitespace.
    assert!(parse_expr("\\set x 1 +\\\n 2", 7, &mut sy).is_ok());
}
