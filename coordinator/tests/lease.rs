//! The leader lease and the fence on a real PostgreSQL catalog: two coordinators' catalog
//! handles on one database. Only one leads; a standby's writes are refused without touching
//! the catalog; once the lease expires the other takes it in the next epoch, and from then on
//! every write of the old leader is refused and lands nothing. A leader cut off from the
//! catalog steps down before its lease can expire.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use blocklab_coordinator::catalog::{Catalog, CatalogError, HostRecord, Location};
use blocklab_coordinator::leader::{self, LeadLost, Role};
use blocklab_testpg::PgServer;

fn host(id: &str, version: &str) -> HostRecord {
    HostRecord {
        host_id: id.into(),
        role: blocklab_spec::HostRole::Agent,
        labels: Vec::new(),
        address: "127.0.0.1".into(),
        version: version.into(),
        facts_json: "{}".into(),
        last_seen: String::new(),
    }
}

async fn version_of(c: &Catalog, id: &str) -> Option<String> {
    c.hosts()
        .await
        .expect("hosts")
        .into_iter()
        .find(|h| h.host_id == id)
        .map(|h| h.version)
}

#[tokio::test]
async fn one_leader_at_a_time_and_the_old_epoch_is_fenced() {
    let pg = PgServer::shared();
    let location = Location::Postgres(pg.database());
    let a = Catalog::connect(&location)
        .await
        .expect("a")
        .fence("10.0.0.1:7400");
    let b = Catalog::connect(&location)
        .await
        .expect("b")
        .fence("10.0.0.2:7400");
    let ttl = Duration::from_millis(1500);

    // Nobody leads yet: both are standbys, and a standby writes nothing.
    assert_eq!(a.leader().await.expect("leader"), None);
    let e = a.upsert_host(&host("h1", "1")).await.expect_err("standby");
    assert!(matches!(e, CatalogError::Fenced { epoch: None }), "{e}");
    assert!(e.to_string().contains("standby"), "{e}");

    // A takes the lease; B cannot while it is live.
    assert_eq!(a.try_lead(ttl).await.expect("lead"), Some(1));
    assert_eq!(a.epoch(), Some(1));
    assert_eq!(b.try_lead(ttl).await.expect("lead"), None);
    assert_eq!(b.epoch(), None);
    let seen = b.leader().await.expect("leader").expect("a leads");
    assert_eq!((seen.address.as_str(), seen.epoch), ("10.0.0.1:7400", 1));
    assert!(
        seen.expires_in_ms > 0 && seen.expires_in_ms <= 1500,
        "{seen:?}"
    );
    a.upsert_host(&host("h1", "1"))
        .await
        .expect("the leader writes");
    assert!(a.renew_lead(ttl).await.expect("renew"));

    // A stops renewing; once its lease expired, B takes over in epoch 2.
    tokio::time::sleep(ttl + Duration::from_millis(300)).await;
    assert_eq!(b.try_lead(ttl).await.expect("lead"), Some(2));
    b.upsert_host(&host("h1", "2"))
        .await
        .expect("the new leader writes");

    // A still believes it leads: its next write is refused and lands nothing.
    assert_eq!(a.epoch(), Some(1));
    let e = a
        .upsert_host(&host("h1", "stale"))
        .await
        .expect_err("fenced");
    assert!(matches!(e, CatalogError::Fenced { epoch: Some(1) }), "{e}");
    assert!(e.to_string().contains("epoch 1"), "{e}");
    assert_eq!(a.epoch(), None, "a fenced leader stops leading");
    assert_eq!(version_of(&b, "h1").await.as_deref(), Some("2"));
    // Its renewal fails too, and it cannot take the live lease back.
    assert!(!a.renew_lead(ttl).await.expect("renew"));
    assert_eq!(a.try_lead(ttl).await.expect("lead"), None);
    let seen = a.leader().await.expect("leader").expect("b leads");
    assert_eq!((seen.address.as_str(), seen.epoch), ("10.0.0.2:7400", 2));
}

#[tokio::test]
async fn a_sqlite_catalog_has_no_lease() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = Catalog::open(&dir.path().join("c.db")).await.expect("open");
    assert_eq!(c.leader().await.expect("leader"), None);
    let e = c
        .fence("x")
        .try_lead(Duration::from_secs(1))
        .await
        .expect_err("no lease");
    assert!(matches!(e, CatalogError::NoLease), "{e}");
}

/// A TCP proxy to `upstream` that forwards until `blackhole` is set, then swallows every
/// byte both ways, holding the connections open (a cut-off network path, not a reset).
async fn proxy(upstream: u16, blackhole: Arc<AtomicBool>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = tokio::net::TcpStream::connect(("127.0.0.1", upstream)).await else {
                continue;
            };
            let (cr, cw) = client.into_split();
            let (sr, sw) = server.into_split();
            tokio::spawn(pipe(cr, sw, blackhole.clone()));
            tokio::spawn(pipe(sr, cw, blackhole.clone()));
        }
    });
    port
}

async fn pipe(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    blackhole: Arc<AtomicBool>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) if !blackhole.load(Ordering::SeqCst) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
        }
    }
}

/// A leader whose catalog connection is blackholed (renewals neither answer nor fail) steps
/// down before its lease can expire, so the coordinator that takes over never shares the
/// lead with it.
#[tokio::test]
async fn a_leader_cut_off_from_the_catalog_steps_down_before_its_lease_expires() {
    let pg = PgServer::shared();
    let url = pg.database();
    let blackhole = Arc::new(AtomicBool::new(false));
    let port = proxy(pg.port(), blackhole.clone()).await;
    let via_proxy = url.replace(&format!(":{}/", pg.port()), &format!(":{port}/"));
    assert_ne!(via_proxy, url, "the URL names the server's port: {url}");
    let a = Catalog::connect(&Location::Postgres(via_proxy))
        .await
        .expect("a")
        .fence("10.0.0.1:7400");
    let ttl = Duration::from_millis(2000);
    let (role, mut roles) = tokio::sync::watch::channel(Role::Standby { leader: None });
    let elected = tokio::spawn(leader::elect(a.clone(), ttl, role));
    roles.wait_for(|r| r.is_leader()).await.expect("a leads");
    let cut = std::time::Instant::now();
    blackhole.store(true, Ordering::SeqCst);
    let lost = tokio::time::timeout(ttl * 3, elected)
        .await
        .expect("elect returns although the catalog never answers")
        .expect("join");
    let stepped_down = cut.elapsed();
    assert!(
        matches!(lost, LeadLost::NotRenewed { epoch: 1, .. }),
        "{lost:?}"
    );
    assert!(
        stepped_down < ttl - leader::step_down_margin(ttl) + Duration::from_millis(100),
        "stepped down {stepped_down:?} after the cut, the lease lasts {ttl:?}"
    );
    assert_eq!(a.epoch(), None, "it writes nothing more");
    let e = a
        .upsert_host(&host("h9", "late"))
        .await
        .expect_err("fenced");
    assert!(matches!(e, CatalogError::Fenced { epoch: None }), "{e}");
}
