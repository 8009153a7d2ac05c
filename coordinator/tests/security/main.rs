//! Security at the edge, in-process on 127.0.0.1: TLS with a CA, API tokens on Control, the
//! fleet join token on Fleet, the listen decision, and a table of malformed requests that each
//! get a clear error while the catalog stays unchanged and the coordinator keeps answering.

mod lab;

use std::net::SocketAddr;
use std::time::Duration;

use blocklab_coordinator::listen::{ListenDecision, Protection, decide_listen};
use blocklab_daemon::security::{Bearer, ClientTls, connect_channel};
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::fleet_client::FleetClient;
use blocklab_proto::v1::*;
use lab::{API_TOKEN, API_TOKEN_2, FLEET_TOKEN, Lab, counts, secret};
use tokio_stream::StreamExt;
use tonic::Code;

async fn list(client: &mut blocklab_cli::Client) -> Result<usize, tonic::Status> {
    Ok(client
        .list_jobs(ListJobsRequest {})
        .await?
        .into_inner()
        .jobs
        .len())
}

#[tokio::test]
async fn tls_and_api_tokens_guard_control() {
    let lab = Lab::start().await;
    // (a) the CLI's client with the CA and either API token lists jobs.
    for token in [API_TOKEN, API_TOKEN_2] {
        let mut c = lab.client(Some(token)).await.expect("connect");
        assert_eq!(list(&mut c).await.expect("list jobs"), 0);
    }
    // (b) no token, a wrong token, the fleet token: Unauthenticated, nothing echoed.
    for (token, expect) in [
        (None, "missing API token"),
        (Some("wrong-api-token-0123456789"), "invalid API token"),
        (Some(FLEET_TOKEN), "invalid API token"),
    ] {
        let mut c = lab.client(token).await.expect("connect");
        let e = list(&mut c).await.expect_err("refused");
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
        assert!(e.message().contains(expect), "{}", e.message());
        assert!(e.message().contains("BLOCKLAB_TOKEN"), "{}", e.message());
        if let Some(t) = token {
            assert!(!e.message().contains(t), "the token is echoed");
        }
    }
    // A malformed authorization value (no scheme) is refused too.
    let channel = connect_channel(&lab.target(), Some(&lab.ca))
        .await
        .expect("channel");
    let mut raw = ControlClient::new(channel);
    let mut req = tonic::Request::new(ListJobsRequest {});
    req.metadata_mut()
        .insert("authorization", API_TOKEN.parse().expect("ascii"));
    let e = raw.list_jobs(req).await.expect_err("no Bearer scheme");
    assert_eq!(e.code(), Code::Unauthenticated);
    assert!(e.message().contains("malformed"), "{}", e.message());

    // (c) without the CA: plain http, another CA, or https without any CA never get an answer.
    let plain = format!("http://{}", lab.addr);
    let refused = match ControlClient::connect(plain).await {
        Err(_) => true,
        Ok(mut c) => c.list_jobs(ListJobsRequest {}).await.is_err(),
    };
    assert!(refused, "plain http to a TLS coordinator must fail");
    let e = connect_channel(&lab.target(), Some(&lab.other_ca))
        .await
        .expect_err("a certificate from another CA is not trusted");
    assert!(e.to_string().contains("cannot connect"), "{e}");
    let e = connect_channel(&format!("https://{}", lab.addr), None)
        .await
        .expect_err("https without a CA");
    assert!(e.to_string().contains("--ca-cert"), "{e}");
    // The wrong name: the certificate is for 127.0.0.1 and localhost only.
    let wrong_name =
        ClientTls::from_ca_pem(std::fs::read(lab.dir.path().join("ca.pem")).expect("ca"))
            .with_domain("coordinator.example");
    assert!(
        connect_channel(&lab.target(), Some(&wrong_name))
            .await
            .is_err()
    );

    // The coordinator still serves after all that.
    let mut c = lab.client(Some(API_TOKEN)).await.expect("connect");
    assert_eq!(list(&mut c).await.expect("still serving"), 0);
}

fn hello(host_id: &str) -> HostMessage {
    HostMessage {
        kind: Some(host_message::Kind::Hello(Hello {
            host_id: host_id.into(),
            role: Role::Worker as i32,
            labels: vec![],
            version: "test".into(),
            address: "127.0.0.1".into(),
            facts_json: "{}".into(),
        })),
    }
}

/// Attaches with `token` and the first message `first`; returns the first reply or the error.
async fn attach(
    lab: &Lab,
    token: Option<&str>,
    first: HostMessage,
) -> Result<CoordinatorMessage, tonic::Status> {
    let channel = connect_channel(&lab.target(), Some(&lab.ca))
        .await
        .expect("channel");
    let token = token.map(secret);
    let mut client = FleetClient::with_interceptor(channel, Bearer::new(token.as_ref()));
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(first).await.expect("queue hello");
    let mut inbound = client
        .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    let reply = tokio::time::timeout(Duration::from_secs(10), inbound.next())
        .await
        .expect("a reply in time")
        .ok_or_else(|| tonic::Status::unknown("stream ended"))?;
    drop(tx);
    reply
}

#[tokio::test]
async fn fleet_needs_the_join_token() {
    let lab = Lab::start().await;
    for (token, expect) in [
        (None, "missing fleet token"),
        (Some("wrong-fleet-token-0123456789"), "invalid fleet token"),
        (Some(API_TOKEN), "invalid fleet token"),
    ] {
        let e = attach(&lab, token, hello("intruder"))
            .await
            .expect_err("refused");
        assert_eq!(e.code(), Code::Unauthenticated, "{e:?}");
        assert!(e.message().contains(expect), "{}", e.message());
        assert!(
            e.message().contains("BLOCKLAB_FLEET_TOKEN"),
            "{}",
            e.message()
        );
    }
    let welcome = attach(&lab, Some(FLEET_TOKEN), hello("good-worker"))
        .await
        .expect("welcomed");
    assert!(
        matches!(welcome.kind, Some(coordinator_message::Kind::Welcome(_))),
        "{welcome:?}"
    );
    let mut c = lab.client(Some(API_TOKEN)).await.expect("connect");
    let hosts = c
        .list_hosts(ListHostsRequest {})
        .await
        .expect("hosts")
        .into_inner()
        .hosts;
    let ids: Vec<&str> = hosts.iter().map(|h| h.host_id.as_str()).collect();
    assert_eq!(
        ids,
        ["good-worker"],
        "only the host with the token is known"
    );
}

#[test]
fn listen_decision() {
    let full = Protection {
        tls: true,
        fleet_token: true,
        api_tokens: true,
    };
    let none = Protection::default();
    let tls_only = Protection { tls: true, ..none };
    let a = |s: &str| s.parse::<SocketAddr>().expect("addr");
    type Case = (
        &'static str,
        Protection,
        bool,
        Result<ListenDecision, Vec<&'static str>>,
    );
    let cases: [Case; 10] = [
        ("127.0.0.1:7400", none, false, Ok(ListenDecision::Loopback)),
        ("127.5.6.7:7400", none, false, Ok(ListenDecision::Loopback)),
        ("[::1]:7400", none, false, Ok(ListenDecision::Loopback)),
        (
            "[::ffff:127.0.0.1]:7400",
            none,
            false,
            Ok(ListenDecision::Loopback),
        ),
        ("10.0.0.1:7400", full, false, Ok(ListenDecision::Protected)),
        (
            "10.0.0.1:7400",
            none,
            false,
            Err(vec![
                "--tls-cert/--tls-key",
                "--fleet-token-file",
                "--api-token-file",
            ]),
        ),
        (
            "0.0.0.0:7400",
            tls_only,
            false,
            Err(vec!["--fleet-token-file", "--api-token-file"]),
        ),
        ("[::]:7400", full, false, Ok(ListenDecision::Protected)),
        (
            "10.0.0.1:7400",
            none,
            true,
            Ok(ListenDecision::Insecure {
                missing: vec![
                    "--tls-cert/--tls-key",
                    "--fleet-token-file",
                    "--api-token-file",
                ],
            }),
        ),
        (
            "192.168.1.5:7400",
            tls_only,
            true,
            Ok(ListenDecision::Insecure {
                missing: vec!["--fleet-token-file", "--api-token-file"],
            }),
        ),
    ];
    for (addr, protection, insecure, expected) in cases {
        let got = decide_listen(a(addr), protection, insecure);
        match (&got, &expected) {
            (Ok(g), Ok(e)) => assert_eq!(g, e, "{addr}"),
            (Err(g), Err(missing)) => {
                assert_eq!(&g.missing, missing, "{addr}");
                let text = g.to_string();
                assert!(text.contains(addr) && text.contains("--insecure"), "{text}");
                assert!(text.contains("--tls-cert FILE --tls-key FILE"), "{text}");
            }
            _ => panic!("{addr}: got {got:?}, expected {expected:?}"),
        }
    }
}

mod bad_input;
mod dashboard;
mod identity;
mod scopes;

/// A worker session `host_id` attached with the fleet token and welcomed: its sender and
/// the coordinator's stream.
async fn welcomed(
    lab: &Lab,
    host_id: &str,
) -> (
    tokio::sync::mpsc::Sender<HostMessage>,
    tonic::Streaming<CoordinatorMessage>,
) {
    let channel = connect_channel(&lab.target(), Some(&lab.ca))
        .await
        .expect("channel");
    let token = secret(FLEET_TOKEN);
    let mut client = FleetClient::with_interceptor(channel, Bearer::new(Some(&token)));
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    tx.send(hello(host_id)).await.expect("queue hello");
    let mut inbound = client
        .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .expect("attached")
        .into_inner();
    let welcome = tokio::time::timeout(Duration::from_secs(10), inbound.next())
        .await
        .expect("welcome in time")
        .expect("a welcome")
        .expect("welcomed");
    assert!(matches!(
        welcome.kind,
        Some(coordinator_message::Kind::Welcome(_))
    ));
    (tx, inbound)
}

/// A second hello on a session ends it with InvalidArgument: a session's identity is its
/// first message only.
#[tokio::test]
async fn a_second_hello_ends_the_session() {
    let lab = Lab::start().await;
    let (tx, mut inbound) = welcomed(&lab, "w-twice").await;
    tx.send(hello("w-other")).await.expect("queue second hello");
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match inbound.next().await {
                Some(Ok(_)) => continue,
                Some(Err(status)) => return Some(status),
                None => return None,
            }
        }
    })
    .await
    .expect("the session ends in time")
    .expect("ended with a status");
    assert_eq!(end.code(), Code::InvalidArgument, "{end:?}");
    assert!(end.message().starts_with("hello: "), "{end:?}");
    drop(tx);
}

/// Progress for a task the session was not given (another host's run, an invented id) is
/// dropped before it reaches the live map or the catalog, and the session stays up.
#[tokio::test]
async fn progress_only_for_tasks_given_to_the_session() {
    let lab = Lab::start().await;
    let (tx, _inbound) = welcomed(&lab, "w-progress").await;
    let refused = blocklab_coordinator::fleet::PROGRESS_REFUSED.get();
    for (stage, live_tps) in [("measuring", None), ("", Some(1e9))] {
        tx.send(HostMessage {
            kind: Some(host_message::Kind::Progress(TaskProgress {
                task_id: "t-invented".into(),
                run_id: format!("run-invented-{stage}"),
                attempt: 1,
                stage: stage.into(),
                message: "not given".into(),
                live_tps,
                build: None,
            })),
        })
        .await
        .expect("queue progress");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while blocklab_coordinator::fleet::PROGRESS_REFUSED.get() < refused + 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reports were not refused"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut c = lab.client(Some(API_TOKEN)).await.expect("connect");
    let hosts = c
        .list_hosts(ListHostsRequest {})
        .await
        .expect("hosts")
        .into_inner()
        .hosts;
    assert!(
        hosts.iter().any(|h| h.host_id == "w-progress" && h.up),
        "{hosts:?}"
    );
    drop(tx);
}
