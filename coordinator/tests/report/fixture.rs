//! A catalog with two finished jobs, written through the catalog's own APIs (results) and
//! plain SQL (jobs, cells, runs, flags), as the scheduler would leave them.

use std::sync::Arc;

use blocklab_coordinator::catalog::{
    Backend, BuildRecord, Catalog, HostRecord, Location, ServerRecord,
};
use blocklab_measure::{LoadResult, Sample, Statement};
use blocklab_testpg::PgServer;
use sqlx::AnyPool;

pub const A_8K: [f64; 3] = [1234.5, 1210.2, 1251.8];
pub const A_16K: [f64; 3] = [1301.3, 1288.9, 1320.4];
/// The third run is flagged suspect (and is an outlier; by default it enters the statistics).
pub const A_32K: [f64; 3] = [1198.0, 1275.5, 9999.0];
pub const B_8K: [f64; 3] = [1358.0, 1331.2, 1377.0];
pub const SUSPECT: &str = "checkpoint in measured window";
pub const DB_FACTS: &str = r#"{"cpu_model":"Test CPU 9000","cpu_logical":2,"memory_bytes":25769803776,"kernel":"6.1.0-test","filesystem":"ext4","warnings":["swap in use: 2048 kB: pages come back from disk"]}"#;

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    /// The PostgreSQL server of a fixture on PostgreSQL (held while the fixture lives).
    pub _pg: Option<Arc<PgServer>>,
    pub location: Location,
    pub catalog: Catalog,
    /// Plain SQL on the same catalog (a connection pool of its own).
    pub sql: AnyPool,
    pub job_a: String,
    pub job_b: String,
}

/// A 5 s window at `t` tps, its latencies in proportion (the samples flat at `t`).
pub fn measured(t: f64) -> LoadResult {
    LoadResult {
        transactions: (t * 5.0) as u64,
        tps_including_connections: t * 0.99,
        tps_excluding_connections: t,
        latency_avg_ms: 4000.0 / t,
        latency_p50_ms: 3900.0 / t,
        latency_p90_ms: 5000.0 / t,
        latency_p99_ms: 8000.0 / t,
        latency_p999_ms: 9000.0 / t,
        latency_max_ms: 20.0,
        measured_seconds: 5.0,
        samples: samples(t, |_| t as u64),
        ..Default::default()
    }
}

/// Five per-second samples at latency 4000/t ms, `transactions(second)` each.
pub fn samples(t: f64, transactions: impl Fn(u32) -> u64) -> Vec<Sample> {
    (1..=5u32)
        .map(|s| Sample {
            second: s,
            transactions: transactions(s),
            latency_avg_ms: 4000.0 / t,
            failures: 0,
        })
        .collect()
}

fn host(id: &str, role: &str, facts: &str) -> HostRecord {
    HostRecord {
        host_id: id.into(),
        role: role.parse().expect("a host role"),
        labels: vec!["nvme".into()],
        address: "127.0.0.1".into(),
        version: "0.1.0".into(),
        facts_json: facts.into(),
        last_seen: String::new(),
    }
}

/// One job: cells (block size KB, is baseline, tps per repetition), 3 repetitions interleaved.
async fn job(
    f: &Fixture,
    name: &str,
    order: &str,
    seed: Option<i64>,
    cells: &[(u32, bool, [f64; 3])],
) -> String {
    let job_id = uuid::Uuid::new_v4().to_string();
    let spec = format!("name = \"{name}\"\nrepetitions = 3\n");
    sqlx::query("INSERT INTO jobs (job_id, name, spec_toml, state, run_order, created_at, seed) VALUES ($1, $2, $3, 'queued', $4, '2026-01-01T00:00:00.000Z', $5)")
        .bind(&job_id).bind(name).bind(&spec).bind(order).bind(seed)
        .execute(&f.sql).await.expect("job");
    for (i, (bs, base, _)) in cells.iter().enumerate() {
        sqlx::query("INSERT INTO cells (job_id, cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline, dims_json) VALUES ($1, $2, $3, $4, 8, 4, $5, $6)")
            .bind(&job_id).bind(i as i64).bind(format!("bs={bs}K wal=8K c=4")).bind(i64::from(*bs)).bind(i64::from(*base))
            .bind(r#"{"scale":2,"source":"default"}"#)
            .execute(&f.sql).await.expect("cell");
    }
    let n = cells.len();
    for rep in 0..3usize {
        for (i, (bs, _, tps)) in cells.iter().enumerate() {
            let run_id = uuid::Uuid::new_v4().to_string();
            sqlx::query("INSERT INTO runs (run_id, job_id, cell_index, repetition, sequence, state, stage) VALUES ($1, $2, $3, $4, $5, 'queued', 'queued')")
                .bind(&run_id).bind(&job_id).bind(i as i64).bind(rep as i64).bind((rep * n + i) as i64)
                .execute(&f.sql).await.expect("run");
            let attempt = f
                .catalog
                .begin_attempt(&run_id, "db1", "w1")
                .await
                .expect("attempt");
            let key = format!("pg15-bs{bs}-wal8");
            let server = ServerRecord {
                build_key: key.clone(),
                build_reused: rep > 0,
                server_version: "15.18".into(),
                block_size: bs * 1024,
                wal_block_size: 8192,
                server_address: "127.0.0.1:54321".into(),
                settings: vec![
                    (
                        "shared_buffers".into(),
                        (128 * 1024 / bs).to_string(),
                        format!("{bs}kB"),
                        "configuration file".into(),
                    ),
                    (
                        "max_wal_size".into(),
                        "1024".into(),
                        "MB".into(),
                        "configuration file".into(),
                    ),
                ],
            };
            f.catalog
                .record_server(&run_id, attempt, &server)
                .await
                .expect("server");
            let t = tps[rep];
            let result = LoadResult {
                samples: samples(t, |s| (t + f64::from(s) * 3.0 - 9.0) as u64),
                // Own-workload figures: repetition r (1-based) lags r/2 ms on average.
                schedule_lag_avg_ms: 0.5 * (rep + 1) as f64,
                schedule_lag_max_ms: 10.0 * (rep + 1) as f64,
                late: rep as u64,
                skipped: 1,
                statements: vec![Statement {
                    script_index: 0,
                    script: "mine.sql".into(),
                    position: 0,
                    command: "SELECT 1".into(),
                    count: 100 * (rep + 1) as u64,
                    latency_sum_ms: 10.0 * ((rep + 1) * (rep + 1)) as f64,
                    failures: 0,
                }],
                ..measured(t)
            };
            assert!(
                f.catalog
                    .finish_run(&run_id, attempt, &result)
                    .await
                    .expect("finish")
            );
            if t == 9999.0 {
                sqlx::query("UPDATE runs SET suspect_json = $1 WHERE run_id = $2")
                    .bind(format!(r#"["{SUSPECT}"]"#))
                    .bind(&run_id)
                    .execute(&f.sql)
                    .await
                    .expect("suspect");
            }
            sqlx::query("INSERT INTO run_stats (run_id, name, delta) VALUES ($1, 'checkpoints_req', 0), ($2, 'buffers_backend', 12)")
                .bind(&run_id).bind(&run_id)
                .execute(&f.sql).await.expect("stats");
            if rep == 0 {
                let b = BuildRecord {
                    build_key: key,
                    block_size_kb: *bs,
                    wal_block_size_kb: 8,
                    source_sha256: "ab12cd34".into(),
                    pg_version: "15.18".into(),
                    reused: false,
                    build_seconds: 210.0,
                };
                f.catalog
                    .record_build(&job_id, "db1", &b)
                    .await
                    .expect("build");
            }
        }
    }
    f.catalog.pin_job_host(&job_id, "db1").await.expect("pin");
    f.catalog
        .set_job_state(&job_id, blocklab_spec::JobState::Running, None)
        .await
        .expect("running");
    f.catalog
        .set_job_state(&job_id, blocklab_spec::JobState::Done, None)
        .await
        .expect("done");
    job_id
}

/// The fixture on SQLite.
pub async fn build() -> Fixture {
    build_on(Backend::Sqlite).await
}

/// The fixture on each backend, SQLite first: the tests that take it check both.
pub async fn both() -> [Fixture; 2] {
    [
        build_on(Backend::Sqlite).await,
        build_on(Backend::Postgres).await,
    ]
}

pub async fn build_on(backend: Backend) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let (pg, location, url) = match backend {
        Backend::Sqlite => {
            let path = dir.path().join("catalog.db");
            let url = format!("sqlite://{}", path.display());
            (None, Location::Sqlite(path), url)
        }
        Backend::Postgres => {
            let pg = PgServer::shared();
            let url = pg.database();
            (Some(pg), Location::Postgres(url.clone()), url)
        }
    };
    let catalog = Catalog::connect(&location).await.expect("open");
    sqlx::any::install_default_drivers();
    let sql = AnyPool::connect(&url).await.expect("sql");
    catalog
        .upsert_host(&host("db1", "agent", DB_FACTS))
        .await
        .expect("db1");
    catalog
        .upsert_host(&host("w1", "worker", r#"{"cpu_model":"Worker CPU"}"#))
        .await
        .expect("w1");
    let mut f = Fixture {
        _dir: dir,
        _pg: pg,
        location,
        catalog,
        sql,
        job_a: String::new(),
        job_b: String::new(),
    };
    f.job_a = job(
        &f,
        "page-sizes-a",
        "interleaved",
        None,
        &[(8, true, A_8K), (16, false, A_16K), (32, false, A_32K)],
    )
    .await;
    f.job_b = job(
        &f,
        "page-sizes-b",
        "shuffled(seed=42)",
        Some(42),
        &[(4, false, A_8K), (8, true, B_8K), (16, false, A_16K)],
    )
    .await;
    f
}
