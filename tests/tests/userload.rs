//! The user's own workload through the fleet: a job through the coordinator, the agent and
//! two workers runs a script file with `-D` variables, a rate and a latency limit against the
//! user's own schema (loaded by `[workload.init] sql`; no pgbench table exists). The catalog
//! keeps the files' sha256, the job's seed, the schedule lag, the late and skipped counts and
//! the per-statement latencies; a second job with the first one's seed draws the same values.
//!
//! A dump missing on the agent's host fails the run naming it, and the daemons stay up.
//!
//! The schema's trigger logs each client's first three rows (`RAISE LOG`); the agent keeps
//! each run's server log when it removes the run's cluster, and the draws are read there.

use std::collections::BTreeMap;
use std::time::Duration;

use blocklab_proto::v1::GetJobRequest;
use blocklab_tests::{Lab, LabOptions, pg_tarball, run_job_with_files};
use sha2::Digest;
use sqlx::Row;

const SCRIPT: &str = "\\set a random(1, :maxval)
\\set b random(1, 1000000000)
\\set slow random(1, 10)
INSERT INTO draws (client, a, b) VALUES (:client_id, :a, :b);
\\if :slow = 1
SELECT pg_sleep(0.2);
\\endif
";

fn schema() -> String {
    r#"CREATE TABLE draws (id bigserial PRIMARY KEY, client int NOT NULL, a int NOT NULL, b bigint NOT NULL);
CREATE FUNCTION keep_first() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k bigint;
BEGIN
  SELECT count(*) INTO k FROM draws WHERE client = NEW.client;
  IF k <= 3 THEN
    RAISE LOG 'draw %,%,%,%,%', NEW.client, k, NEW.a, NEW.b,
      (to_regclass('pgbench_accounts') IS NULL)::text;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER keep_first AFTER INSERT ON draws FOR EACH ROW EXECUTE FUNCTION keep_first();
"#
    .to_string()
}

/// The job.
fn spec(seed: Option<u64>) -> String {
    format!(
        r#"
name = "user-workload"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [4]
[workload]
scripts = [{{ file = "draws.sql", weight = 1 }}]
duration = "4s"
threads = 2
rate = 100
latency_limit = "50ms"
{}
[workload.variables]
maxval = 1000000
[workload.init]
sql = "schema.sql"
[placement]
client_workers = 2
"#,
        pg_tarball().display(),
        seed.map_or(String::new(), |s| format!("random_seed = {s}")),
    )
}

/// The draws the trigger logged into the kept server logs: (client, k) → (a, b, no pgbench
/// table); the logs removed.
fn take_draws(dir: &std::path::Path) -> BTreeMap<(i64, i64), (i64, i64, bool)> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("kept server logs").flatten() {
        let text = std::fs::read_to_string(e.path()).expect("log file");
        for line in text.lines() {
            let Some((_, draw)) = line.split_once("LOG:  draw ") else {
                continue;
            };
            let f: Vec<&str> = draw.trim().split(',').collect();
            assert_eq!(f.len(), 5, "{line:?}");
            let n = |i: usize| f[i].parse::<i64>().expect("number");
            out.insert((n(0), n(1)), (n(2), n(3), f[4] == "true"));
        }
        std::fs::remove_file(e.path()).expect("remove");
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_users_script_schema_and_seed_go_through_the_fleet() {
    let lab = Lab::start_with(LabOptions {
        workers_in_process: 2,
        worker_processes: 0,
        ..LabOptions::default()
    })
    .await;
    let schema = schema();
    let files = [("draws.sql", SCRIPT), ("schema.sql", schema.as_str())];
    let mut client = lab.client().await;
    let timeout = Duration::from_secs(20 * 60);

    let (job1, state) = run_job_with_files(&mut client, &spec(None), &files, timeout).await;
    assert_eq!(state, "done", "job {job1}");
    let first = take_draws(&lab.server_logs());

    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");
    // The files as sent, with their sha256.
    let stored: Vec<(String, String, String)> =
        sqlx::query_as("SELECT role, name, sha256 FROM job_scripts WHERE job_id = ? ORDER BY role")
            .bind(&job1)
            .fetch_all(&db)
            .await
            .expect("job_scripts");
    let sha = |t: &str| hex::encode(sha2::Sha256::digest(t.as_bytes()));
    assert_eq!(
        stored,
        vec![
            ("init-sql".into(), "schema.sql".into(), sha(&schema)),
            ("script".into(), "draws.sql".into(), sha(SCRIPT)),
        ]
    );
    // One seed per job, chosen at submit; the run's clients used it.
    let seed: i64 = sqlx::query_scalar("SELECT random_seed FROM jobs WHERE job_id = ?")
        .bind(&job1)
        .fetch_one(&db)
        .await
        .expect("job seed");
    assert!(seed > 0, "a seed was chosen: {seed}");
    let r = sqlx::query("SELECT res.run_id, res.transactions, res.failures, res.late, res.skipped, res.schedule_lag_avg_ms, res.schedule_lag_max_ms, res.random_seed FROM results res JOIN runs USING (run_id) WHERE job_id = ?")
        .bind(&job1)
        .fetch_one(&db)
        .await
        .expect("result");
    let run_id: String = r.get("run_id");
    let (txns, failures, late, skipped) = (
        r.get::<i64, _>("transactions"),
        r.get::<i64, _>("failures"),
        r.get::<i64, _>("late"),
        r.get::<i64, _>("skipped"),
    );
    let (lag_avg, lag_max) = (
        r.get::<f64, _>("schedule_lag_avg_ms"),
        r.get::<f64, _>("schedule_lag_max_ms"),
    );
    assert_eq!(
        r.get::<i64, _>("random_seed"),
        seed,
        "the run used the job's seed"
    );
    assert_eq!(failures, 0);
    // Per statement, merged over both workers: the slow branch is over the latency limit.
    let statements: Vec<(String, i64, f64)> = sqlx::query_as(
        "SELECT command, count, latency_avg_ms FROM run_statements WHERE run_id = ? ORDER BY script_index, position",
    )
    .bind(&run_id)
    .fetch_all(&db)
    .await
    .expect("statements");
    assert_eq!(statements.len(), 7, "{statements:?}");
    let count_of = |prefix: &str| {
        statements
            .iter()
            .find(|s| s.0.starts_with(prefix))
            .unwrap_or_else(|| panic!("{prefix} in {statements:?}"))
    };
    let insert = count_of("INSERT INTO draws");
    let sleep = count_of("SELECT pg_sleep");
    assert_eq!(insert.1, txns, "every transaction inserted once");
    assert!(sleep.1 > 0 && sleep.2 >= 195.0, "{sleep:?}");
    assert!(insert.2 < sleep.2, "{insert:?} {sleep:?}");
    assert!(
        late >= sleep.1,
        "late {late} counts every slow transaction ({})",
        sleep.1
    );
    assert!(
        skipped > 0,
        "slow transactions put clients behind the schedule"
    );
    assert!(
        lag_avg > 0.0 && lag_max >= lag_avg,
        "lag avg {lag_avg} max {lag_max}"
    );
    let init_sql_s: f64 = sqlx::query_scalar(
        "SELECT value FROM run_metrics WHERE run_id = ? AND name = 'init.sql_s'",
    )
    .bind(&run_id)
    .fetch_one(&db)
    .await
    .expect("init sql timed");
    assert!(init_sql_s > 0.0);
    // The clients of both workers drew their own values, without any pgbench table.
    let clients: Vec<i64> = first
        .keys()
        .filter(|(_, k)| *k == 1)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(clients, vec![0, 1, 2, 3], "{first:?}");
    assert!(first.values().all(|v| v.2), "no pgbench table: {first:?}");
    let mut bs: Vec<i64> = clients.iter().map(|c| first[&(*c, 1)].1).collect();
    bs.dedup();
    assert_eq!(bs.len(), 4, "each client has its own stream: {first:?}");
    // `blocklab job ID --run 1` shows the figures and the statements.
    let detail = client
        .get_job(GetJobRequest {
            job_id: job1.clone(),
            run: 1,
        })
        .await
        .expect("job")
        .into_inner();
    let shown = blocklab_cli::commands::render_run_detail(&detail.run_detail.expect("detail"));
    assert!(shown.contains(&format!("random seed {seed}")), "{shown}");
    assert!(shown.contains("SELECT pg_sleep(0.2)"), "{shown}");
    assert!(
        shown.contains(&format!("late {late}, skipped {skipped}")),
        "{shown}"
    );

    // A second job with the first one's seed draws the same first values per client.
    let (job2, state) =
        run_job_with_files(&mut client, &spec(Some(seed as u64)), &files, timeout).await;
    assert_eq!(state, "done", "job {job2}");
    let second = take_draws(&lab.server_logs());
    let seed2: i64 = sqlx::query_scalar("SELECT random_seed FROM jobs WHERE job_id = ?")
        .bind(&job2)
        .fetch_one(&db)
        .await
        .expect("job seed");
    assert_eq!(seed2, seed);
    assert_eq!(first.len(), 12, "3 rows of each of 4 clients: {first:?}");
    assert_eq!(second, first, "the same seed draws the same values");
    eprintln!(
        "measured: transactions {txns}, late {late}, skipped {skipped}, schedule lag avg {lag_avg:.3} ms max {lag_max:.3} ms, slow statement {:.1} ms x {}, seed {seed}, first draws {:?}",
        sleep.2,
        sleep.1,
        first
            .iter()
            .filter(|((_, k), _)| *k == 1)
            .collect::<Vec<_>>()
    );

    // A dump that is not on the agent's host fails the run at loading-data, naming it; the
    // daemons keep running.
    let missing = spec(None).replace(
        "sql = \"schema.sql\"",
        "sql = \"schema.sql\"\ndump = \"/nonexistent/app.dump\"",
    );
    let (job3, state) = run_job_with_files(&mut client, &missing, &files, timeout).await;
    assert_eq!(state, "failed", "job {job3}");
    let (stage, error): (String, String) =
        sqlx::query_as("SELECT stage, error FROM runs WHERE job_id = ?")
            .bind(&job3)
            .fetch_one(&db)
            .await
            .expect("run");
    assert_eq!(stage, "loading-data");
    assert!(
        error.contains("dump") && error.contains("/nonexistent/app.dump"),
        "{error}"
    );
    let hosts = client
        .list_hosts(blocklab_proto::v1::ListHostsRequest {})
        .await
        .expect("hosts")
        .into_inner()
        .hosts;
    assert_eq!(hosts.iter().filter(|h| h.up).count(), 3, "{hosts:?}");
    lab.shutdown().await;
}
