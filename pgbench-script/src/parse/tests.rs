use super::*;
use crate::sql::Segment;

fn parse(text: &str) -> Result<ParsedScript, ScriptError> {
    parse_script("bad.sql", text, &mut Symbols::default())
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

// Every expected message below is what pgbench 15.18 printed (after "pgbench: error: ")
// for the same one-line script.
#[test]
fn errors_read_like_pgbench() {
    assert_eq!(
        err("\\set x 1 +\n"),
        "bad.sql:1: syntax error in command \"set\"\n\\set x 1 +\n          ^ error found here"
    );
    assert_eq!(
        err("\\set x foo(1)\n"),
        "bad.sql:1: unexpected function name (foo) in command \"set\"\n\\set x foo(1)\n         ^ error found here"
    );
    assert_eq!(
        err("\\set x random(1)\n"),
        "bad.sql:1: unexpected number of arguments (random) in command \"set\"\n\\set x random(1)\n               ^ error found here"
    );
    assert_eq!(
        err("\\set x 99999999999999999999\n"),
        "bad.sql:1: bigint constant overflow (99999999999999999999) in command \"set\"\n\\set x 99999999999999999999\n                          ^ error found here"
    );
    assert_eq!(
        err("\\set\n"),
        "bad.sql:1: missing argument in command \"set\""
    );
    assert_eq!(
        err("\\sleep 10 xs\n"),
        "bad.sql:1: unrecognized time unit, must be us, ms or s (xs) in command \"sleep\"\n\\sleep 10 xs\n          ^ error found here"
    );
    assert_eq!(
        err("\\sleep abc\n"),
        "bad.sql:1: invalid sleep time, must be an integer (abc) in command \"sleep\"\n\\sleep abc\n       ^ error found here"
    );
    assert_eq!(
        err("\\bogus\n"),
        "bad.sql:1: invalid command in command \"bogus\"\n\\bogus"
    );
    assert_eq!(
        err("\\else 1\n"),
        "bad.sql:1: unexpected argument in command \"else\"\n\\else 1"
    );
    assert_eq!(
        err("select 1; \\gset a b\n"),
        "bad.sql:1: too many arguments in command \"gset\"\n\\gset a b"
    );
    assert_eq!(
        err("\\gset\n"),
        "bad.sql:1: \\gset must follow an SQL command"
    );
    assert_eq!(
        err("\\set x $\n"),
        "bad.sql:1: unexpected character ($) in command \"set\"\n\\set x $\n       ^ error found here"
    );
    assert_eq!(
        err("\\setshell x\n"),
        "bad.sql:1: missing argument in command \"setshell\"\n\\setshell x"
    );
    assert_eq!(
        err("\\shell\n"),
        "bad.sql:1: missing command in command \"shell\"\n\\shell"
    );
    assert_eq!(
        err("\\if true\n"),
        "condition error in script \"bad.sql\" command 2: \\if without matching \\endif"
    );
    assert_eq!(
        err("\\set x (1\n"),
        "bad.sql:1: syntax error in command \"set\"\n\\set x (1\n         ^ error found here"
    );
    // Lines count from 1 across SQL and meta-commands.
    assert!(err("select 1;\n\nselect\n 2;\n\\set y 1 +\n").starts_with("bad.sql:5: syntax error"));
    assert_eq!(
        err("\\endif\n"),
        "condition error in script \"bad.sql\" command 1: \\endif without matching \\if"
    );
    assert_eq!(
        err("\\if 1\n\\else\n\\elif 2\n\\endif\n"),
        "condition error in script \"bad.sql\" command 3: \\elif after \\else"
    );
    assert_eq!(
        err("\\if 1\n\\else\n\\else\n\\endif\n"),
        "condition error in script \"bad.sql\" command 3: \\else after \\else"
    );
    assert_eq!(
        err("\\elif 1\n"),
        "condition error in script \"bad.sql\" command 1: \\elif without matching \\if"
    );
    assert_eq!(
        err("select 1; \\gset\n\\gset\n"),
        "bad.sql:2: \\gset must follow an SQL command (select 1;)"
    );
}

#[test]
fn sql_commands_split_like_psql() {
    let s = parse("-- leading comment\nselect 1;\nselect ';', $$;\\$$, (1;\n2) as x;\n\nupdate t\n  set a = 1\n  where b = ':x'; select :x::int, x::text, ::y \\gset p_\nselect 1 \\; select 2;\ninsert into t values (:a) -- last one without semicolon").unwrap();
    let texts: Vec<&str> = s.steps.iter().map(|st| st.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "select 1;",
            "select ';', $$;\\$$, (1;",
            "update t",
            "select :x::int, x::text, ::y",
            "select 1 ; select 2;",
            "insert into t values (:a) -- last one without semicolon",
        ]
    );
    assert_eq!(
        s.steps.iter().map(|st| st.line).collect::<Vec<_>>(),
        [2, 3, 6, 8, 9, 10]
    );
    let Command::Sql(c) = &s.steps[2].command else {
        panic!()
    };
    assert_eq!(c.text, "update t\n  set a = 1\n  where b = ':x';");
    // pgbench substitutes inside quotes too (it does not parse SQL).
    assert_eq!(c.param_sql, "update t\n  set a = 1\n  where b = '$1';");
    let Command::Sql(c) = &s.steps[3].command else {
        panic!()
    };
    assert_eq!(c.param_sql, "select $1::int, x::text, ::y");
    assert_eq!(c.result_set, Some(ResultSet::Gset("p_".into())));
    assert!(matches!(&c.segments[1], Segment::Var(_, raw) if raw == ":x"));
    let Command::Sql(c) = &s.steps[4].command else {
        panic!()
    };
    assert_eq!(c.result_set, None);
    let Command::Sql(c) = &s.steps[1].command else {
        panic!()
    };
    assert_eq!(c.result_set, None);
}

#[test]
fn aset_attaches_with_empty_prefix() {
    let s = parse("select 1 as a\n\\aset\n").unwrap();
    let Command::Sql(c) = &s.steps[0].command else {
        panic!()
    };
    assert_eq!(c.result_set, Some(ResultSet::Aset(String::new())));
}

#[test]
fn meta_commands_parse() {
    let mut sy = Symbols::default();
    let s = parse_script("s", "\\set a 1\n\\SLEEP 10ms\n\\sleep :a us\n\\sleep 2\n\\sleep -3 s\n\\startpipeline\nselect 1;\n\\endpipeline\n\\shell echo :a x\n\\setshell v echo 5\n\\set long 1 + \\\n  2\n", &mut sy).unwrap();
    let a = sy.get("a").unwrap();
    let cmds: Vec<&Command> = s.steps.iter().map(|st| &st.command).collect();
    assert!(matches!(cmds[0], Command::Set(id, _) if *id == a));
    assert!(matches!(cmds[1], Command::Sleep(SleepArg::Micros(10_000))));
    assert!(matches!(cmds[2], Command::Sleep(SleepArg::Var(id, 1)) if *id == a));
    assert!(matches!(
        cmds[3],
        Command::Sleep(SleepArg::Micros(2_000_000))
    ));
    assert!(matches!(
        cmds[4],
        Command::Sleep(SleepArg::Micros(-3_000_000))
    ));
    assert!(matches!(cmds[5], Command::StartPipeline));
    assert!(matches!(cmds[7], Command::EndPipeline));
    assert!(matches!(cmds[8], Command::Shell(argv) if argv == &["echo", ":a", "x"]));
    assert!(matches!(cmds[9], Command::SetShell(v, argv) if v == "v" && argv == &["echo", "5"]));
    assert!(matches!(cmds[10], Command::Set(..)));
    assert_eq!(s.uses_shell(), Some(9));
    assert_eq!(s.steps[10].line, 11);
}

#[test]
fn conditionals_are_linked() {
    let s = parse(
        "\\if 1\nselect 1;\n\\elif 2\nselect 2;\n\\else\n\\if 3\n\\endif\n\\endif\nselect 9;\n",
    )
    .unwrap();
    let c: Vec<&Command> = s.steps.iter().map(|st| &st.command).collect();
    assert!(matches!(c[0], Command::If(_, 2)));
    assert!(matches!(c[2], Command::Elif(_, 4, 7)));
    assert!(matches!(c[4], Command::Else(7)));
    assert!(matches!(c[5], Command::If(_, 6)));
    assert!(matches!(c[7], Command::Endif));
}

#[test]
fn syncpipeline_and_shell_argument_limit() {
    let s =
        parse("\\startpipeline\nselect 1;\n\\syncpipeline\nselect 2;\n\\endpipeline\n").unwrap();
    assert!(matches!(s.steps[2].command, Command::SyncPipeline));
    assert!(parse("\\syncpipeline x\n").is_err());
    // pgbench's MAX_ARGS: \shell and 255 arguments parse, 256 do not.
    let args = |n: usize| vec!["x"; n].join(" ");
    assert!(parse(&format!("\\shell echo {}\n", args(254))).is_ok());
    let e = parse(&format!("\\shell echo {}\n", args(255))).unwrap_err();
    assert_eq!(e.msg, "too many arguments");
    assert_eq!(e.command.as_deref(), Some("shell"));
    assert!(parse(&format!("\\setshell v echo {}\n", args(254))).is_err());
}
