//! The README's example queries, run against the fixture catalog.

use crate::fixture::{A_8K, A_16K, A_32K, both};

/// Verbatim from the README section "Querying the catalog with SQL".
const CELLS: &str = "SELECT job_name, cell, block_size, n, runs_suspect, round(tps_mean, 1) AS tps, round(tps_pct_change, 1) AS pct FROM comparison_v ORDER BY job_name, block_size";
const RUNS: &str = "SELECT sequence, cell, started_at, round(tps, 1) AS tps, suspect_json, in_stats FROM results_v WHERE job_name = 'page-sizes-a' ORDER BY sequence";
const SETTINGS: &str = "SELECT r.sequence, c.label AS cell, s.name, s.setting, s.unit FROM run_settings s JOIN runs r USING (run_id) JOIN cells c USING (job_id, cell_index) WHERE s.name = 'shared_buffers' ORDER BY r.job_id, r.sequence";

/// job_name, cell, block_size, n, runs_suspect, tps, pct
type CellRow = (String, String, i64, i64, i64, f64, Option<f64>);

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[test]
fn readme_shows_these_queries() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md"))
        .expect("README");
    for q in [CELLS, RUNS, SETTINGS] {
        assert!(readme.contains(q), "README lacks {q}");
    }
}

#[tokio::test]
async fn readme_queries_answer_from_the_views() {
    for f in both().await {
        let db = f.catalog.reader();
        let rows: Vec<CellRow> = sqlx::query_as(CELLS)
            .fetch_all(db)
            .await
            .expect("comparison_v");
        assert_eq!(rows.len(), 6);
        let a: Vec<_> = rows.iter().filter(|r| r.0 == "page-sizes-a").collect();
        assert_eq!((a[0].2, a[1].2, a[2].2), (8192, 16384, 32768));
        assert_eq!(a[0].6, Some(0.0));
        let round1 = |x: f64| (x * 10.0).round() / 10.0;
        assert_eq!(a[1].5, round1(mean(&A_16K)));
        assert_eq!(a[1].6, Some(5.8));
        // The suspect outlier is in the 32K mean: by default every completed run counts (the
        // same rule as `blocklab results`).
        assert_eq!((a[2].3, a[2].4, a[2].5), (3, 1, round1(mean(&A_32K))));
        assert_eq!(
            a[2].6,
            Some(round1(100.0 * (mean(&A_32K) - mean(&A_8K)) / mean(&A_8K)))
        );

        let runs: Vec<(i64, String, String, f64, Option<String>, i64)> =
            sqlx::query_as(RUNS).fetch_all(db).await.expect("results_v");
        assert_eq!(runs.len(), 9);
        assert!(
            runs.windows(2).all(|w| w[0].2 <= w[1].2),
            "started in sequence"
        );
        // Interleaved: consecutive runs are of different cells.
        assert!(runs.windows(2).all(|w| w[0].1 != w[1].1));
        let suspect: Vec<_> = runs.iter().filter(|r| r.4.is_some()).collect();
        assert_eq!(suspect.len(), 1);
        assert!(suspect[0].5 == 1 && runs.iter().filter(|r| r.5 == 1).count() == 9);

        let settings: Vec<(i64, String, String, String, String)> = sqlx::query_as(SETTINGS)
            .fetch_all(db)
            .await
            .expect("settings");
        assert_eq!(settings.len(), 18);
        let bs16 = settings
            .iter()
            .find(|s| s.1.starts_with("bs=16K"))
            .expect("16K");
        assert_eq!((bs16.3.as_str(), bs16.4.as_str()), ("8192", "16kB"));

        let var: Option<f64> = sqlx::query_scalar(
        "SELECT tps_variance FROM cells_v WHERE job_name = 'page-sizes-a' AND block_size_kb = 16",
    )
    .fetch_one(db)
    .await
    .expect("variance");
        let sd = 15.868_312_239_596_674_f64; // SciPy, stats_tests.rs
        assert!((var.expect("n > 1") - sd * sd).abs() < 1e-6);
    }
}

#[tokio::test]
async fn host_cores_come_from_the_facts() {
    for f in both().await {
        // The fixture's worker reports no core count; a host that does is read back.
        assert_eq!(f.catalog.host_cores("w1").await.expect("w1"), None);
        assert_eq!(f.catalog.host_cores("nobody").await.expect("none"), None);
        sqlx::query("UPDATE hosts SET facts_json = '{\"cpu_cores\": 8}' WHERE host_id = 'w1'")
            .execute(&f.sql)
            .await
            .expect("update");
        assert_eq!(f.catalog.host_cores("w1").await.expect("w1"), Some(8));
    }
}

#[tokio::test]
async fn a_job_that_excludes_suspect_runs_leaves_them_out_of_the_views() {
    for f in both().await {
        // The views read only this path of the stored plan.
        sqlx::query("UPDATE jobs SET plan_json = '{\"Benchmark\":{\"spec\":{\"analysis\":{\"exclude_suspect\":true}}}}' WHERE name = 'page-sizes-a'")
        .execute(&f.sql)
        .await
        .expect("exclude");
        let db = f.catalog.reader();
        let rows: Vec<CellRow> = sqlx::query_as(CELLS)
            .fetch_all(db)
            .await
            .expect("comparison_v");
        let a: Vec<_> = rows.iter().filter(|r| r.0 == "page-sizes-a").collect();
        let round1 = |x: f64| (x * 10.0).round() / 10.0;
        assert_eq!((a[2].3, a[2].4, a[2].5), (2, 1, round1(mean(&A_32K[..2]))));
        let runs: Vec<(i64, String, String, f64, Option<String>, i64)> =
            sqlx::query_as(RUNS).fetch_all(db).await.expect("results_v");
        assert_eq!(runs.iter().filter(|r| r.5 == 1).count(), 8);
    }
}
