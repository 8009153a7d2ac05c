//! `catalog copy`: the fixture's SQLite catalog, with the tables the fixture leaves empty
//! filled by plain SQL, copied into a fresh PostgreSQL database; every table arrives with the
//! same rows, value for value. A target that holds rows is refused.

use std::collections::BTreeMap;

use blocklab_coordinator::catalog::Location;
use blocklab_coordinator::catalog::copy::{CopyError, TABLES, copy};
use blocklab_testpg::PgServer;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, AssertSqlSafe, Column, Row};

use crate::fixture::build;

/// Rows for the tables the fixture does not write.
const FILL: &[&str] = &[
    "INSERT INTO host_credentials (host_id, role, token_sha256, enrolled_at) VALUES ('db1', 'agent', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '2026-01-01T00:00:00.000Z')",
    "INSERT INTO job_scripts (job_id, role, name, sha256, bytes, text) SELECT job_id, 'script', 'mine.sql', 'ab', 8, 'SELECT 1' FROM jobs",
    "INSERT INTO job_hosts (job_id, slot, host_id) SELECT job_id, 0, 'db1' FROM jobs",
    "INSERT INTO result_shares (run_id, worker_host_id, clients, transactions, failures, tps, latency_avg_ms, latency_p99_ms, client_cpu_user_s, client_cpu_system_s) SELECT run_id, 'w1', 4, transactions, 0, tps, 1.25, 2.5, 0.125, 0.0625 FROM results",
    "INSERT INTO probe_results (run_id, job_id, host_id, target, mode, chunk_bytes, mb_per_s, user_cpu_s, system_cpu_s, latency_avg_us, latency_p99_us, cache_dropped, bytes, device, filesystem) SELECT run_id, job_id, 'db1', '/data', 'seqread', 8192, 512.5, 0.1, 0.2, 15.5, 80.25, 1, 1073741824, 'nvme0n1', 'ext4' FROM runs LIMIT 2",
    "INSERT INTO run_metrics (run_id, name, value, unit, higher_is_better, position) SELECT run_id, 'notpm', tps * 60.0, 'tpm', 1, 0 FROM results",
];

/// Every row of `table`, each as (column, value) pairs by column name, in sorted order.
async fn rows(db: &AnyPool, table: &str) -> Vec<BTreeMap<String, String>> {
    let all: Vec<AnyRow> = sqlx::query(AssertSqlSafe(format!("SELECT * FROM {table}")))
        .fetch_all(db)
        .await
        .expect(table);
    let mut out: Vec<BTreeMap<String, String>> = all
        .iter()
        .map(|r| {
            r.columns()
                .iter()
                .map(|c| {
                    let i = c.ordinal();
                    let v = if let Ok(v) = r.try_get::<Option<i64>, _>(i) {
                        format!("{v:?}")
                    } else if let Ok(v) = r.try_get::<Option<f64>, _>(i) {
                        format!("{v:?}")
                    } else if let Ok(v) = r.try_get::<Option<String>, _>(i) {
                        format!("{v:?}")
                    } else {
                        format!("{:?}", r.try_get::<Option<Vec<u8>>, _>(i).expect("blob"))
                    };
                    (c.name().to_string(), v)
                })
                .collect()
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn copy_moves_every_table_into_postgresql() {
    let f = build().await;
    for sql in FILL {
        sqlx::query(*sql).execute(&f.sql).await.expect(sql);
    }
    let pg = PgServer::shared();
    let url = pg.database();
    let target = Location::Postgres(url.clone());
    let copied = copy(&f.location, &target).await.expect("copy");
    assert_eq!(
        copied.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        TABLES.to_vec()
    );
    let to = AnyPool::connect(&url).await.expect("target");
    for &(table, n) in &copied {
        let want = rows(&f.sql, table).await;
        assert!(!want.is_empty(), "the source's {table} is empty");
        assert_eq!(n, want.len() as u64, "{table}: rows copied");
        let got = rows(&to, table).await;
        assert_eq!(got.len(), want.len(), "{table}: row count");
        assert_eq!(got, want, "{table}: contents");
    }
    // The copy is a working catalog: the results read the same through it.
    let on_pg = blocklab_coordinator::catalog::Catalog::connect(&target)
        .await
        .expect("open the copy");
    assert_eq!(
        on_pg.runs(&f.job_a).await.expect("runs"),
        f.catalog.runs(&f.job_a).await.expect("runs")
    );
    assert_eq!(
        on_pg.job(&f.job_b).await.expect("job"),
        f.catalog.job(&f.job_b).await.expect("job")
    );

    // Once more into the same database: refused, and nothing changes there.
    let again = copy(&f.location, &target).await.expect_err("not empty");
    assert!(
        matches!(
            again,
            CopyError::NotEmpty {
                table: "hosts",
                rows: 2,
                ..
            }
        ),
        "{again}"
    );
    assert_eq!(
        again.to_string(),
        format!(
            "--to {target}: the target catalog is not empty (table hosts holds 2 rows); copy \
             into a new, empty database or file"
        )
    );
    assert_eq!(rows(&to, "runs").await, rows(&f.sql, "runs").await);
}
