use crate::script::{Files, ScriptSource};
use crate::{JobPlan, Spec, SpecError, referenced_files};

const HEAD: &str =
    "name = \"u\"\n[source]\ntarball = \"/tmp/pg.tar.bz2\"\n[matrix]\nclients = [4]\n";
const SCRIPT: &str = "\\set a random(1, :maxval)\nINSERT INTO t VALUES (:client_id, :a);\n";

fn files(list: &[(&str, &str)]) -> Files {
    list.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn parse(workload: &str, sent: &[(&str, &str)]) -> Result<Spec, SpecError> {
    Spec::parse_with(&format!("{HEAD}[workload]\n{workload}"), None, &files(sent))
}

const FULL: &str = "scripts = [{ file = \"mine.sql\", weight = 2 }, { builtin = \"select-only\" }]
duration = \"10s\"
rate = 500
latency_limit = \"20ms\"
max_tries = 3
connect_per_transaction = true
random_seed = 42
[workload.variables]
maxval = 1000
name = \"x\"
[workload.init]
sql = \"schema.sql\"
dump = \"/srv/dumps/app.dump\"
";

#[test]
fn every_option_reaches_the_workload() {
    let s = parse(
        FULL,
        &[
            ("mine.sql", SCRIPT),
            ("schema.sql", "CREATE TABLE t (c int, a int);"),
        ],
    )
    .expect("valid");
    let o = &s.workload.pgbench;
    assert_eq!(o.scripts.len(), 2);
    let ScriptSource::File(f) = &o.scripts[0].source else {
        panic!("a file first: {:?}", o.scripts);
    };
    assert_eq!(
        (f.name.as_str(), f.text.as_str(), o.scripts[0].weight),
        ("mine.sql", SCRIPT, 2)
    );
    assert_eq!(f.sha256.len(), 64);
    assert_eq!(
        o.scripts[1].source,
        ScriptSource::Builtin("select-only".into())
    );
    assert_eq!(
        o.variables,
        vec![
            ("maxval".into(), "1000".into()),
            ("name".into(), "x".into())
        ]
    );
    assert_eq!(o.rate, 500.0);
    assert_eq!(o.latency_limit, Some(std::time::Duration::from_millis(20)));
    assert_eq!(
        (o.max_tries, o.connect_per_transaction, o.random_seed),
        (3, true, Some(42))
    );
    assert!(o.statement_latencies && o.continue_on_error);
    let init = &s.workload.init;
    assert!(
        !init.pgbench,
        "a [workload.init] table loads no pgbench table unless asked"
    );
    assert_eq!(init.dump.as_deref(), Some("/srv/dumps/app.dump"));
    assert_eq!(
        init.sql.as_ref().map(|f| f.name.as_str()),
        Some("schema.sql")
    );
}

#[test]
fn the_defaults_are_pgbench_s() {
    let s = parse("duration = \"5s\"", &[]).expect("valid");
    let o = &s.workload.pgbench;
    assert!(o.scripts.is_empty() && o.variables.is_empty());
    assert_eq!(
        (o.rate, o.max_tries, o.transactions, o.random_seed),
        (0.0, 1, 0, None)
    );
    assert!(s.workload.init.pgbench && s.workload.init.sql.is_none());
    let t =
        parse("transactions = 100\ninit = \"none\"\nfillfactor = 90", &[]).expect_err("refused");
    assert_eq!(t.field, "workload.fillfactor");
    let p = parse(
        "transactions = 100\nfillfactor = 90\npartitions = 4\npartition_method = \"hash\"\nforeign_keys = true\ninit_steps = \"dtgvp\"",
        &[],
    )
    .expect("valid");
    let i = &p.workload.init.pgbench_options;
    assert_eq!((i.fillfactor, i.partitions, i.foreign_keys), (90, 4, true));
    assert_eq!(p.workload.duration, std::time::Duration::ZERO);
    assert_eq!(p.workload.pgbench.transactions, 100);
}

/// (workload text, files sent, field named, words in the message)
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);

#[test]
fn bad_input_names_the_field_or_the_line() {
    let script = [("mine.sql", SCRIPT)];
    let cases: [Case; 14] = [
        (
            "scripts = [{ file = \"mine.sql\" }]\nduration = \"5s\"",
            &[],
            "workload.scripts[0].file",
            "not sent",
        ),
        (
            "scripts = [{ file = \"bad.sql\" }]\nduration = \"5s\"",
            &[("bad.sql", "\\set a random(1,\n")],
            "workload.scripts[0].file",
            "bad.sql:1:",
        ),
        (
            "scripts = [{ file = \"sh.sql\" }]\nduration = \"5s\"",
            &[("sh.sql", "SELECT 1;\n\\shell ls\n")],
            "workload.scripts[0].file",
            "sh.sql:2:",
        ),
        ("duration = \"5s\"", &script, "files", "mine.sql"),
        (
            "scripts = [{ file = \"mine.sql\" }]\nbuiltin = \"select-only\"\nduration = \"5s\"",
            &script,
            "workload.scripts",
            "not both",
        ),
        (
            "scripts = [{ builtin = \"tpcc\" }]\nduration = \"5s\"",
            &[],
            "workload.scripts[0].builtin",
            "not a built-in",
        ),
        (
            "scripts = [{ file = \"mine.sql\", weight = 0 }]\nduration = \"5s\"",
            &script,
            "workload.scripts[0].weight",
            "between 1",
        ),
        (
            "duration = \"5s\"\nrate = -1",
            &[],
            "workload.rate",
            "above 0",
        ),
        (
            "duration = \"5s\"\nlatency_limit = \"soon\"",
            &[],
            "workload.latency_limit",
            "duration",
        ),
        (
            "duration = \"5s\"\ntransactions = 10",
            &[],
            "workload.transactions",
            "not both",
        ),
        (
            "transactions = 10\nmax_tries = 0",
            &[],
            "workload.max_tries",
            "bound",
        ),
        (
            "duration = \"5s\"\nmax_tries = 0\nretry_time_limit = \"1s\"",
            &[],
            "workload.retry_time_limit",
            "transactions",
        ),
        (
            "duration = \"5s\"\n[workload.init]\ncolour = \"red\"",
            &[],
            "workload.init.colour",
            "unknown key",
        ),
        (
            "duration = \"5s\"\n[workload.init]\ndump = \"relative.dump\"",
            &[],
            "workload.init.dump",
            "absolute",
        ),
    ];
    for (text, sent, field, words) in cases {
        let e = parse(text, sent).expect_err(text);
        assert_eq!(e.field, field, "{text}: {e}");
        assert!(e.message.contains(words), "{text}: {e}");
    }
    let tpcc = parse("kind = \"tpcc\"\nduration = \"5s\"\nrate = 10", &[]).expect_err("tpcc");
    assert_eq!(
        (tpcc.field.as_str(), tpcc.message.contains("pgbench")),
        ("workload.rate", true)
    );
    let vars = parse(
        "duration = \"5s\"\n[workload.variables]\nclient_id = 3",
        &[],
    )
    .expect_err("vars");
    assert_eq!(vars.field, "workload.variables.client_id");
}

#[test]
fn the_files_a_spec_names_are_listed_from_its_text() {
    let text = format!(
        "{HEAD}[workload]\n{FULL}[workload_variants.other]\nscripts = [{{ file = \"other.sql\" }}, {{ file = \"mine.sql\" }}]\n"
    );
    assert_eq!(
        referenced_files(&text).expect("lists"),
        vec!["mine.sql", "schema.sql", "other.sql"]
    );
}

#[test]
fn a_job_gets_one_seed_and_keeps_its_files_in_the_plan() {
    let text = format!(
        "{HEAD}[workload]\nscripts = [{{ file = \"mine.sql\" }}]\nduration = \"5s\"\n[workload_variants.a]\nrate = 10\n[workload_variants.b]\nrandom_seed = 7\n"
    );
    let sent = files(&[("mine.sql", SCRIPT)]);
    let plan = JobPlan::parse_with(&text, None, &sent)
        .expect("valid")
        .with_random_seed(99);
    assert_eq!(plan.random_seed(), Some(99));
    let JobPlan::Benchmark { spec, .. } = &plan else {
        panic!("a benchmark");
    };
    let seeds: Vec<_> = spec
        .workload_variants
        .iter()
        .map(|(n, w)| (n.as_str(), w.pgbench.random_seed))
        .collect();
    assert_eq!(seeds, vec![("a", Some(99)), ("b", Some(7))]);
    let back = JobPlan::from_json(&plan.to_json()).expect("reads back");
    assert_eq!(back, plan);
    let f = back.user_files();
    assert_eq!(f.len(), 1);
    assert_eq!((f[0].0, f[0].1.text.as_str()), ("script", SCRIPT));
}

#[test]
fn a_plan_stored_before_these_options_reads_with_pgbench_s_defaults() {
    let plan =
        JobPlan::parse(&format!("{HEAD}[workload]\nduration = \"5s\"\n"), None).expect("valid");
    let mut json: serde_json::Value = serde_json::from_str(&plan.to_json()).expect("json");
    let w = &mut json["Benchmark"]["spec"]["workload"];
    w.as_object_mut().expect("object").remove("pgbench");
    w.as_object_mut().expect("object").remove("init");
    let old = JobPlan::from_json(&json.to_string()).expect("old plan reads");
    let JobPlan::Benchmark { spec, .. } = old else {
        panic!("a benchmark");
    };
    let (o, init) = (&spec.workload.pgbench, &spec.workload.init);
    assert_eq!((o.max_tries, o.rate, o.random_seed), (1, 0.0, None));
    assert!(
        !o.statement_latencies,
        "old runs recorded no statement latencies"
    );
    assert!(init.pgbench && init.sql.is_none() && init.dump.is_none());
}
