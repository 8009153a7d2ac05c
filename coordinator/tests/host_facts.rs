//! A host's facts history on both catalog backends: a row only when the facts change, and
//! at most `FACTS_KEPT_PER_HOST` rows per host, the newest kept.

use blocklab_coordinator::catalog::{Catalog, FACTS_KEPT_PER_HOST, HostRecord, Location};
use blocklab_testpg::PgServer;

fn hello(facts: &str) -> HostRecord {
    HostRecord {
        host_id: "db1".into(),
        role: blocklab_spec::HostRole::Agent,
        labels: Vec::new(),
        address: "127.0.0.1".into(),
        version: "1".into(),
        facts_json: facts.into(),
        last_seen: String::new(),
    }
}

async fn history(c: &Catalog) -> Vec<String> {
    sqlx::query_scalar("SELECT facts_json FROM host_facts WHERE host_id = 'db1' ORDER BY seen_at")
        .fetch_all(c.reader())
        .await
        .expect("host_facts")
}

async fn bounded_history(c: Catalog) {
    for _ in 0..3 {
        c.upsert_host(&hello("{\"cpus\":2}")).await.expect("hello");
    }
    assert_eq!(
        history(&c).await,
        ["{\"cpus\":2}"],
        "unchanged facts, one row"
    );
    // A host whose facts change at every hello (seen_at has millisecond resolution).
    for i in 0..FACTS_KEPT_PER_HOST + 20 {
        c.upsert_host(&hello(&format!("{{\"boot\":{i}}}")))
            .await
            .expect("hello");
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let kept = history(&c).await;
    assert_eq!(kept.len(), FACTS_KEPT_PER_HOST);
    assert_eq!(kept.first().map(String::as_str), Some("{\"boot\":20}"));
    assert_eq!(
        kept.last().cloned(),
        Some(format!("{{\"boot\":{}}}", FACTS_KEPT_PER_HOST + 19))
    );
}

#[tokio::test]
async fn facts_history_is_bounded_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = Catalog::open(&dir.path().join("catalog.db"))
        .await
        .expect("catalog");
    bounded_history(c).await;
}

#[tokio::test]
async fn facts_history_is_bounded_on_postgres() {
    let pg = PgServer::shared();
    let c = Catalog::connect(&Location::Postgres(pg.database()))
        .await
        .expect("catalog");
    bounded_history(c).await;
}
