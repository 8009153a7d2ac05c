//! A finished job's results and dashboard page are kept in the catalog once computed
//! (`job_results`, `job_pages`), on SQLite and PostgreSQL, and read back equal; rows of
//! another binary's analysis are not read.

use blocklab_coordinator::catalog::job_results::analysis;
use blocklab_coordinator::results::query_results;

use super::fixture::both;

#[tokio::test]
async fn finished_results_are_kept_and_read_back_equal() {
    for f in both().await {
        // As a submitted pgbench job names its headline.
        sqlx::query("UPDATE jobs SET headline_metric = 'tps' WHERE job_id = $1")
            .bind(&f.job_a)
            .execute(&f.sql)
            .await
            .expect("headline");
        let kept = |metric: &'static str| {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM job_results WHERE job_id = $1 AND metric = $2 AND analysis = $3",
            )
            .bind(f.job_a.clone())
            .bind(metric)
            .bind(analysis())
        };
        assert_eq!(kept("tps").fetch_one(&f.sql).await.expect("count"), 0);
        let first = query_results(&f.catalog, "a.db", &f.job_a, "")
            .await
            .expect("results");
        // The headline, asked for as "" or by its name, is one row.
        assert_eq!(kept("tps").fetch_one(&f.sql).await.expect("count"), 1);
        let by_name = query_results(&f.catalog, "a.db", &f.job_a, "tps")
            .await
            .expect("results");
        assert_eq!(by_name, first);
        assert_eq!(kept("").fetch_one(&f.sql).await.expect("count"), 0);
        assert_eq!(
            kept("latency_p99_ms")
                .fetch_one(&f.sql)
                .await
                .expect("count"),
            0
        );
        // Read back: the same results, with the path of the asking coordinator.
        let again = query_results(&f.catalog, "b.db", &f.job_a, "")
            .await
            .expect("results");
        assert_eq!(again.catalog_path, "b.db");
        assert_eq!(
            blocklab_measure::job::QueryResults {
                catalog_path: "a.db".into(),
                ..again.clone()
            },
            first
        );
        // What is read is the kept row: a changed row is what comes back.
        let json: String = sqlx::query_scalar(
            "SELECT results_json FROM job_results WHERE job_id = $1 AND metric = 'tps'",
        )
        .bind(&f.job_a)
        .fetch_one(&f.sql)
        .await
        .expect("row");
        let runs_done = format!("\"runs_done\":{}", first.runs_done);
        assert!(json.contains(&runs_done), "{json}");
        let changed = json.replace(&runs_done, "\"runs_done\":1000");
        sqlx::query("UPDATE job_results SET results_json = $1 WHERE job_id = $2")
            .bind(&changed)
            .bind(&f.job_a)
            .execute(&f.sql)
            .await
            .expect("update");
        let read = query_results(&f.catalog, "b.db", &f.job_a, "")
            .await
            .expect("results");
        assert_eq!(read.runs_done, 1000);
        // Another binary's rows are not read: its analysis may differ.
        sqlx::query("UPDATE job_results SET analysis = 'another build'")
            .execute(&f.sql)
            .await
            .expect("update");
        let fresh = query_results(&f.catalog, "a.db", &f.job_a, "")
            .await
            .expect("results");
        assert_eq!(fresh, first);
        // A row that does not parse is computed again, and the results stay right.
        sqlx::query(
            "UPDATE job_results SET results_json = 'not json' WHERE analysis <> 'another build'",
        )
        .execute(&f.sql)
        .await
        .expect("update");
        let again = query_results(&f.catalog, "a.db", &f.job_a, "")
            .await
            .expect("results");
        assert_eq!(again, first);
    }
}

#[tokio::test]
async fn a_finished_jobs_page_is_kept_and_read_back() {
    use blocklab_coordinator::dashboard::job_page::job_page;
    for f in both().await {
        let kept = || {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM job_pages WHERE job_id = $1 AND analysis = $2 AND catalog_path = 'a.db'",
            )
            .bind(f.job_a.clone())
            .bind(analysis())
        };
        assert_eq!(kept().fetch_one(&f.sql).await.expect("count"), 0);
        let (first, finished) = job_page(&f.catalog, "a.db", &f.job_a).await.expect("page");
        assert!(finished);
        assert!(first.contains("a.db"), "the page names its catalog");
        assert_eq!(kept().fetch_one(&f.sql).await.expect("count"), 1);
        // Read back: the kept row is what comes back.
        sqlx::query("UPDATE job_pages SET page_html = $1 WHERE job_id = $2")
            .bind(first.replace("a.db", "kept.db"))
            .bind(&f.job_a)
            .execute(&f.sql)
            .await
            .expect("update");
        let (read, _) = job_page(&f.catalog, "a.db", &f.job_a).await.expect("page");
        assert!(read.contains("kept.db") && !read.contains("a.db"));
        // Another catalog path renders and keeps its own page; so does another binary.
        let (other, _) = job_page(&f.catalog, "b.db", &f.job_a).await.expect("page");
        assert!(other.contains("b.db") && !other.contains("kept.db"));
        sqlx::query("UPDATE job_pages SET analysis = 'another build'")
            .execute(&f.sql)
            .await
            .expect("update");
        let (fresh, _) = job_page(&f.catalog, "a.db", &f.job_a).await.expect("page");
        assert_eq!(fresh, first);
        assert_eq!(kept().fetch_one(&f.sql).await.expect("count"), 1);
    }
}
