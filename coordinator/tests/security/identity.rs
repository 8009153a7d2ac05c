//! Host identity on Fleet: an enrolled credential attaches only as its host id and role, the
//! shared token retires once a host is enrolled, and a revocation ends the live session.

use super::*;
use blocklab_coordinator::catalog::Catalog;
use blocklab_coordinator::enrollment;
use blocklab_spec::HostRole;

fn hello_as(host_id: &str, role: Role) -> HostMessage {
    HostMessage {
        kind: Some(host_message::Kind::Hello(Hello {
            host_id: host_id.into(),
            role: role as i32,
            labels: vec![],
            version: "test".into(),
            address: "127.0.0.1".into(),
            facts_json: "{}".into(),
        })),
    }
}

/// Attaches and keeps the stream: the sender (to keep the request open) and the replies.
async fn open_session(
    lab: &Lab,
    token: &str,
    first: HostMessage,
) -> (
    tokio::sync::mpsc::Sender<HostMessage>,
    tonic::Streaming<CoordinatorMessage>,
) {
    let channel = connect_channel(&lab.target(), Some(&lab.ca))
        .await
        .expect("channel");
    let token = secret(token);
    let mut client = FleetClient::with_interceptor(channel, Bearer::new(Some(&token)));
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(first).await.expect("queue hello");
    let inbound = client
        .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .expect("attached")
        .into_inner();
    (tx, inbound)
}

async fn host_ids(lab: &Lab) -> Vec<String> {
    bindings(lab)
        .await
        .into_iter()
        .map(|(id, _, _)| id)
        .collect()
}

#[tokio::test]
async fn enrolled_hosts_attach_only_as_themselves_and_revocation_ends_them() {
    let lab = Lab::start().await;
    let catalog = Catalog::open(&lab.catalog()).await.expect("catalog");
    let db1 = enrollment::add(&catalog, "db1", HostRole::Agent, &Default::default())
        .await
        .expect("enroll db1");
    let db1 = db1.expose().to_string();

    for (first, code, message) in [
        (
            hello_as("db2", Role::Agent),
            Code::PermissionDenied,
            "this credential is enrolled for host db1 (agent); it may not attach as host db2",
        ),
        (
            hello_as("db1", Role::Worker),
            Code::PermissionDenied,
            "this credential is enrolled for host db1 as agent; it may not attach as worker",
        ),
    ] {
        let e = attach(&lab, Some(&db1), first).await.expect_err("refused");
        assert_eq!(e.code(), code, "{e:?}");
        assert_eq!(e.message(), message);
        assert!(!e.message().contains(&db1), "the token is echoed");
    }
    // The shared token no longer attaches anyone, not even a new host id.
    let e = attach(
        &lab,
        Some(FLEET_TOKEN),
        hello_as("new-worker", Role::Worker),
    )
    .await
    .expect_err("shared token retired");
    assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
    assert!(
        e.message()
            .starts_with("hosts have been enrolled on this coordinator"),
        "{}",
        e.message()
    );
    assert!(host_ids(&lab).await.is_empty(), "a refused host was stored");

    // db1 as itself is welcomed, and stays until it is revoked.
    let (_keep, mut replies) = open_session(&lab, &db1, hello_as("db1", Role::Agent)).await;
    let first = replies.next().await.expect("a reply").expect("welcome");
    assert!(matches!(
        first.kind,
        Some(coordinator_message::Kind::Welcome(_))
    ));
    assert_eq!(host_ids(&lab).await, ["db1"]);
    enrollment::revoke(&catalog, "db1").await.expect("revoke");
    let revoked_at = std::time::Instant::now();
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match replies.next().await {
                Some(Ok(_)) => continue,
                Some(Err(status)) => return Some(status),
                None => return None,
            }
        }
    })
    .await
    .expect("the session ended within 10 s");
    let status = ended.expect("the stream ends with a status");
    assert_eq!(status.code(), Code::Unauthenticated, "{status:?}");
    assert!(
        status
            .message()
            .starts_with("the credential of host db1 was revoked"),
        "{}",
        status.message()
    );
    assert!(revoked_at.elapsed() < Duration::from_secs(5));
    let mut c = lab.client(Some(API_TOKEN)).await.expect("connect");
    let up: Vec<bool> = c
        .list_hosts(ListHostsRequest {})
        .await
        .expect("hosts")
        .into_inner()
        .hosts
        .iter()
        .map(|h| h.up)
        .collect();
    assert_eq!(up, [false], "the revoked host is still up");
    // Its next hello is refused.
    let e = attach(&lab, Some(&db1), hello_as("db1", Role::Agent))
        .await
        .expect_err("revoked");
    assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
    // With every credential revoked the fleet stays closed: the shared token attaches no
    // one, neither as db1 nor as a host id never enrolled.
    for host in ["db1", "db7"] {
        let e = attach(&lab, Some(FLEET_TOKEN), hello_as(host, Role::Agent))
            .await
            .expect_err("shared token retired for good");
        assert_eq!(e.code(), Code::PermissionDenied, "{e:?}");
        assert!(
            e.message()
                .starts_with("hosts have been enrolled on this coordinator: the shared fleet token no longer attaches hosts"),
            "{e:?}"
        );
    }
}

/// An enrolled host is placed by the labels and reached at the address of its enrollment,
/// whatever its hello claims; `hosts set` changes them for its next hello.
#[tokio::test]
async fn enrolled_hosts_cannot_claim_labels_or_an_address() {
    let lab = Lab::start().await;
    let catalog = Catalog::open(&lab.catalog()).await.expect("catalog");
    let bound = enrollment::Binding {
        labels: vec!["rack=a".into()],
        address: Some("10.1.2.3".parse().expect("ip")),
    };
    let db1 = enrollment::add(&catalog, "db1", HostRole::Agent, &bound)
        .await
        .expect("enroll db1");
    let db1 = db1.expose().to_string();
    let claiming = || {
        let mut h = hello_as("db1", Role::Agent);
        if let Some(host_message::Kind::Hello(hello)) = &mut h.kind {
            hello.labels = vec!["gpu".into(), "e2e".into()];
            hello.address = "10.9.9.9".into();
        }
        h
    };
    {
        let (_keep, mut replies) = open_session(&lab, &db1, claiming()).await;
        replies.next().await.expect("a reply").expect("welcome");
        assert_eq!(
            bindings(&lab).await,
            [(
                "db1".to_string(),
                vec!["rack=a".to_string()],
                "10.1.2.3".to_string()
            )]
        );
    }
    // Rebound to other labels and to the address its connection comes from.
    enrollment::bind(&catalog, "db1", Some(&["rack=b".to_string()]), Some(None))
        .await
        .expect("bind");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_keep, mut replies) = open_session(&lab, &db1, claiming()).await;
    replies.next().await.expect("a reply").expect("welcome");
    assert_eq!(
        bindings(&lab).await,
        [(
            "db1".to_string(),
            vec!["rack=b".to_string()],
            "127.0.0.1".to_string()
        )]
    );
}

async fn bindings(lab: &Lab) -> Vec<(String, Vec<String>, String)> {
    let mut c = lab.client(Some(API_TOKEN)).await.expect("connect");
    c.list_hosts(ListHostsRequest {})
        .await
        .expect("hosts")
        .into_inner()
        .hosts
        .into_iter()
        .map(|h| (h.host_id, h.labels, h.address))
        .collect()
}
