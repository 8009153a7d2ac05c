//! The user's own data from a dump: `[workload.init] dump` names a custom-format archive on
//! the agent's host, made here by the real `pg_dump` of a small schema with data; the agent
//! restores it with the build's own `pg_restore` and a script runs against the restored
//! tables (it aborts its clients unless every row is there, so the run completes only then).
//! A truncated archive fails the run at loading-data naming pg_restore's error, and the
//! catalog holds nothing of that run but its failure. pg_restore logs in as the run's role: an
//! archive entry that leaves its role and creates a superuser fails the run, and a dump outside
//! the agent's dump directory is refused before pg_restore runs.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use blocklab_tests::{Lab, LabOptions, pg_tarball, pg_user, run_job_with_files};

/// Debian's PostgreSQL 15 (installed by deploy/setup.sh) makes the dump.
const BINDIR: &str = "/usr/lib/postgresql/15/bin";

const SCHEMA: &str = "CREATE TABLE items (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO items SELECT g, 2 * g FROM generate_series(1, 1000) g;
CREATE TABLE hits (id bigserial PRIMARY KEY, item int NOT NULL REFERENCES items, v int NOT NULL);
CREATE INDEX hits_item ON hits (item);
COMMENT ON TABLE items IS 'XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX';
";

/// The comment of `items` in the archive; [`crafted`] rewrites it in place.
const COMMENT: &str =
    "'XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX'";

/// The archive with its comment entry rewritten (same length, so the archive stays
/// readable) into statements that leave the restoring role and create a superuser: they
/// succeed only if pg_restore logged in as a superuser.
fn crafted(bytes: &[u8]) -> Vec<u8> {
    let mut sql = "'x'; RESET ROLE; CREATE ROLE blocklab_intruder SUPERUSER; SELECT 1".to_string();
    while sql.len() < COMMENT.len() {
        sql.push(' ');
    }
    let at = bytes
        .windows(COMMENT.len())
        .position(|w| w == COMMENT.as_bytes())
        .expect("the comment in the archive");
    let mut out = bytes.to_vec();
    out[at..at + COMMENT.len()].copy_from_slice(sql.as_bytes());
    out
}

/// Every row of `items` must be there (count and sum), else the client aborts on 1 / 0.
const SCRIPT: &str = "\\set id random(1, 1000)
SELECT count(*) AS n, sum(v) AS s FROM items \\gset
\\if :n != 1000 or :s != 1001000
SELECT 1 / 0;
\\endif
SELECT v FROM items WHERE id = :id \\gset
INSERT INTO hits (item, v) VALUES (:id, :v);
";

/// The stage and reason of the job's (one) failed run.
async fn failure(db: &sqlx::SqlitePool, job: &str) -> (String, String) {
    sqlx::query_as("SELECT stage, error FROM runs WHERE job_id = ?")
        .bind(job)
        .fetch_one(db)
        .await
        .expect("run")
}

fn ids(user: &str) -> (u32, u32) {
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, user]).output().expect("id");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .expect("numeric id")
    };
    (id("-u"), id("-g"))
}

fn run_as(cmd: &mut Command, what: &str) {
    let (uid, gid) = ids(&pg_user());
    let out = cmd
        .uid(uid)
        .gid(gid)
        .env("LC_ALL", "C")
        .output()
        .expect(what);
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A custom-format dump of [`SCHEMA`] in `dir` (owned by the PostgreSQL user), made on a
/// throwaway server that listens only on a socket in `dir`.
fn make_dump(dir: &Path) -> PathBuf {
    let bin = Path::new(BINDIR);
    let data = dir.join("data");
    let port = "54329";
    run_as(
        Command::new(bin.join("initdb")).arg("-D").arg(&data).args([
            "-U",
            "maker",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
        ]),
        "initdb",
    );
    let opts = format!("-p {port} -c listen_addresses= -k {}", dir.display());
    run_as(
        Command::new(bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .args(["-w", "-o", &opts, "-l"])
            .arg(dir.join("server.log"))
            .arg("start"),
        "pg_ctl start",
    );
    let host = dir.display().to_string();
    let conn = ["-h", host.as_str(), "-p", port, "-U", "maker"];
    run_as(
        Command::new(bin.join("psql"))
            .args(conn)
            .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c"])
            .arg(SCHEMA),
        "psql",
    );
    let dump = dir.join("app.dump");
    run_as(
        Command::new(bin.join("pg_dump"))
            .args(conn)
            .args(["-Fc", "-d", "postgres", "-f"])
            .arg(&dump),
        "pg_dump",
    );
    run_as(
        Command::new(bin.join("pg_ctl"))
            .arg("-D")
            .arg(&data)
            .args(["-w", "-m", "fast", "stop"]),
        "pg_ctl stop",
    );
    std::fs::remove_dir_all(&data).expect("remove the data directory");
    dump
}

fn spec(dump: &Path) -> String {
    format!(
        r#"
name = "user-dump"
[source]
tarball = "{}"
configure = ["--without-icu"]
[matrix]
block_size_kb = [8]
clients = [2]
[workload]
scripts = [{{ file = "check.sql", weight = 1 }}]
duration = "3s"
[workload.init]
dump = "{}"
"#,
        pg_tarball().display(),
        dump.display()
    )
}

async fn count(db: &sqlx::SqlitePool, table: &str, job: &str) -> i64 {
    // The table names are this file's constants.
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {table} WHERE run_id IN (SELECT run_id FROM runs WHERE job_id = ?)"
    )))
    .bind(job)
    .fetch_one(db)
    .await
    .unwrap_or_else(|e| panic!("{table}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_users_dump_is_restored_and_a_corrupt_one_fails_the_run() {
    let dir = tempfile::Builder::new()
        .prefix("blocklab-dump-")
        .tempdir_in("/tmp")
        .expect("dump dir");
    let (uid, gid) = ids(&pg_user());
    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).expect("chown");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let dump = make_dump(dir.path());
    let bytes = std::fs::read(&dump).expect("dump");
    assert!(bytes.starts_with(b"PGDMP"), "a custom-format archive");
    // The same archive cut after its table of contents: pg_restore fails reading the data.
    let corrupt = dir.path().join("corrupt.dump");
    std::fs::write(&corrupt, &bytes[..bytes.len() * 2 / 3]).expect("corrupt dump");
    std::os::unix::fs::chown(&corrupt, Some(uid), Some(gid)).expect("chown");
    let hostile = dir.path().join("hostile.dump");
    std::fs::write(&hostile, crafted(&bytes)).expect("crafted dump");
    std::os::unix::fs::chown(&hostile, Some(uid), Some(gid)).expect("chown");

    let lab = Lab::start_with(LabOptions {
        dumps_dir: Some(dir.path().to_path_buf()),
        ..LabOptions::default()
    })
    .await;
    let mut client = lab.client().await;
    let files = [("check.sql", SCRIPT)];
    let timeout = Duration::from_secs(20 * 60);
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}?mode=ro",
        lab.catalog_path().display()
    ))
    .await
    .expect("catalog");

    let (job, state) = run_job_with_files(&mut client, &spec(&dump), &files, timeout).await;
    assert_eq!(state, "done", "job {job}");
    let (run_id, txns, failures): (String, i64, i64) = sqlx::query_as(
        "SELECT res.run_id, res.transactions, res.failures FROM results res JOIN runs USING (run_id) WHERE job_id = ?",
    )
    .bind(&job)
    .fetch_one(&db)
    .await
    .expect("result");
    assert!(txns > 0, "transactions ran on the restored tables");
    assert_eq!(failures, 0);
    // Per statement: the check never took its 1 / 0 branch, and every transaction inserted
    // into the restored table (its sequence and key owned by the run's role).
    let statements: Vec<(String, i64)> = sqlx::query_as(
        "SELECT command, count FROM run_statements WHERE run_id = ? ORDER BY script_index, position",
    )
    .bind(&run_id)
    .fetch_all(&db)
    .await
    .expect("statements");
    let count_of = |prefix: &str| {
        statements
            .iter()
            .find(|s| s.0.starts_with(prefix))
            .map_or(0, |s| s.1)
    };
    assert_eq!(count_of("SELECT count(*)"), txns, "{statements:?}");
    assert_eq!(count_of("SELECT 1 / 0"), 0, "{statements:?}");
    assert_eq!(count_of("INSERT INTO hits"), txns, "{statements:?}");
    let restore_s: f64 = sqlx::query_scalar(
        "SELECT value FROM run_metrics WHERE run_id = ? AND name = 'init.restore_s'",
    )
    .bind(&run_id)
    .fetch_one(&db)
    .await
    .expect("restore timed");
    assert!(restore_s > 0.0);
    eprintln!(
        "dump of {} bytes restored in {restore_s:.3} s; {txns} transactions",
        bytes.len()
    );

    // The truncated archive: the run fails where the data is loaded, with pg_restore's own
    // words, and nothing of it is stored but its failure.
    let (job2, state) = run_job_with_files(&mut client, &spec(&corrupt), &files, timeout).await;
    assert_eq!(state, "failed", "job {job2}");
    let (stage, error, tail): (String, String, String) =
        sqlx::query_as("SELECT stage, error, log_tail FROM runs WHERE job_id = ?")
            .bind(&job2)
            .fetch_one(&db)
            .await
            .expect("run");
    assert_eq!(stage, "loading-data");
    assert!(
        error.starts_with("pg_restore failed: ") && error.contains(": pg_restore: error: "),
        "{error}"
    );
    assert!(tail.contains("pg_restore: error: "), "{tail}");
    eprintln!("corrupt dump: {error}");
    for table in [
        "results",
        "result_shares",
        "run_samples",
        "run_series",
        "run_metrics",
        "run_statements",
        "run_stats",
    ] {
        assert_eq!(count(&db, table, &job2).await, 0, "{table} of job {job2}");
    }

    // An archive whose entry leaves the restoring role: pg_restore logs in as the run's role,
    // so there is no superuser to return to and the entry fails the run.
    let (job3, state) = run_job_with_files(&mut client, &spec(&hostile), &files, timeout).await;
    assert_eq!(state, "failed", "job {job3}");
    let (stage, error) = failure(&db, &job3).await;
    assert_eq!(stage, "loading-data");
    assert!(
        error.contains("pg_restore: error: ")
            && error.contains("must be superuser to create superusers"),
        "{error}"
    );

    // A dump outside the agent's dump directory is refused before pg_restore runs.
    let outside = tempfile::Builder::new()
        .prefix("blocklab-outside-")
        .tempdir_in("/tmp")
        .expect("outside dir");
    let elsewhere = outside.path().join("app.dump");
    std::fs::copy(&dump, &elsewhere).expect("copy dump");
    let (job4, state) = run_job_with_files(&mut client, &spec(&elsewhere), &files, timeout).await;
    assert_eq!(state, "failed", "job {job4}");
    let (stage, error) = failure(&db, &job4).await;
    assert_eq!(stage, "loading-data");
    assert!(
        error.contains(&format!(
            "{} is outside the agent's dump directory {}",
            elsewhere.display(),
            dir.path().display()
        )),
        "{error}"
    );
    lab.shutdown().await;
}
