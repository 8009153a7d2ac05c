//! The Fleet fuzz target's body, shared by `fuzz/` (cargo-fuzz) and a plain test: bytes
//! become a sequence of `HostMessage`s (hellos with good and bad ids, roles, addresses and
//! facts, heartbeats, progress, results for tasks nobody assigned, empty messages) sent on
//! one Fleet stream to an in-process coordinator on loopback. Nothing may panic, and the
//! catalog may change only as a valid sequence changes it: a valid first hello stores its
//! host (and is welcomed); nothing else is ever stored, no job, cell, run or result.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use blocklab_proto::v1::fleet_client::FleetClient;
use blocklab_proto::v1::{
    BuildProgress, BuildResult, CoordinatorMessage, Heartbeat, Hello, HostMessage,
    ListBuildsResult, Role, RunLoadResult, TaskError, TaskProgress, TaskResult,
    coordinator_message, host_message, task_result,
};
use tokio_stream::StreamExt as _;
use tonic::transport::Channel;

use crate::catalog::Catalog;
use crate::{CoordinatorConfig, serve};

/// Host ids a hello may carry: valid ones, the empty id, one too long.
const HOST_IDS: &[&str] = &["fz-db", "fz-worker", "fz-3", ""];
/// Addresses a hello may carry (none is ever dialed).
const ADDRESSES: &[&str] = &["", "127.0.0.1", "::1", "not-an-ip", "127.0.0.2:5432"];
/// Facts a hello may carry.
const FACTS: &[&str] = &[
    "{}",
    "{",
    "{\"cpu_cores\": 4}",
    "[]",
    "null",
    "",
    "{\"kernel\": \"6.1\"}",
    "{}",
];
/// Stages a progress report may name.
const STAGES: &[&str] = &["measuring", "ready", "bogus", "", "loading-data"];

/// Reads the input a byte at a time; zeros once it is used up.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }

    fn pick<'s>(&mut self, items: &[&'s str]) -> &'s str {
        items[usize::from(self.byte()) % items.len()]
    }

    fn text(&mut self) -> String {
        let n = usize::from(self.byte() % 24);
        (0..n).map(|_| char::from(self.byte() % 95 + 32)).collect()
    }

    fn host_id(&mut self) -> String {
        match self.byte() % 8 {
            0 => "x".repeat(129),
            1 => self.text(),
            _ => self.pick(HOST_IDS).to_string(),
        }
    }
}

fn message(b: &mut Bytes<'_>) -> HostMessage {
    let kind = match b.byte() % 6 {
        0 | 5 => Some(host_message::Kind::Hello(Hello {
            host_id: b.host_id(),
            role: i32::from(b.byte() % 4),
            labels: (0..b.byte() % 3).map(|_| b.text()).collect(),
            version: "fuzz".into(),
            address: b.pick(ADDRESSES).to_string(),
            facts_json: b.pick(FACTS).to_string(),
        })),
        1 => Some(host_message::Kind::Heartbeat(Heartbeat {
            sequence: u64::from(b.byte()),
            sent_unix_ms: u64::from(b.byte()),
        })),
        2 => Some(host_message::Kind::Progress(TaskProgress {
            task_id: b.text(),
            run_id: b.text(),
            attempt: u32::from(b.byte()),
            stage: b.pick(STAGES).to_string(),
            message: b.text(),
            live_tps: b
                .byte()
                .is_multiple_of(2)
                .then(|| f64::from(b.byte()) - 10.0),
            build: b.byte().is_multiple_of(3).then(|| BuildProgress {
                block_size_kb: u32::from(b.byte()),
                wal_block_size_kb: u32::from(b.byte()),
                step: b
                    .pick(&["fetch", "configure", "make", "install", "bogus"])
                    .to_string(),
                percent: b
                    .byte()
                    .is_multiple_of(2)
                    .then(|| f64::from(b.byte()) - 20.0),
                estimated: b.byte().is_multiple_of(2),
                eta_seconds: b.byte().is_multiple_of(2).then(|| u32::from(b.byte())),
            }),
        })),
        3 => {
            let outcome = match b.byte() % 5 {
                0 => None,
                1 => Some(task_result::Outcome::Error(TaskError {
                    stage: b.pick(STAGES).to_string(),
                    reason: b.text(),
                    log_tail: b.text(),
                })),
                2 => Some(task_result::Outcome::Build(BuildResult::default())),
                3 => Some(task_result::Outcome::RunLoad(RunLoadResult::default())),
                _ => Some(task_result::Outcome::ListBuilds(ListBuildsResult::default())),
            };
            Some(host_message::Kind::Result(TaskResult {
                task_id: b.text(),
                run_id: b.text(),
                attempt: u32::from(b.byte()),
                outcome,
            }))
        }
        _ => None,
    };
    HostMessage { kind }
}

/// The messages `data` stands for: up to 16.
pub fn messages(data: &[u8]) -> Vec<HostMessage> {
    let mut b = Bytes(data);
    let n = 1 + usize::from(b.byte() % 16);
    (0..n).map(|_| message(&mut b)).collect()
}

/// The host id a valid first hello attaches (the coordinator's rules for a hello).
pub fn valid_hello(first: Option<&HostMessage>) -> Option<String> {
    let Some(host_message::Kind::Hello(h)) = first.and_then(|m| m.kind.as_ref()) else {
        return None;
    };
    let role_ok = h.role == Role::Agent as i32 || h.role == Role::Worker as i32;
    let id_ok = (1..=128).contains(&h.host_id.len());
    let address_ok = h.address.is_empty() || h.address.parse::<std::net::IpAddr>().is_ok();
    let facts_ok = h.facts_json.trim().is_empty()
        || matches!(
            serde_json::from_str::<serde_json::Value>(&h.facts_json),
            Ok(serde_json::Value::Object(_))
        );
    (role_ok && id_ok && address_ok && facts_ok).then(|| h.host_id.clone())
}

/// An in-process coordinator on 127.0.0.1 (open: no tokens, no enrolled hosts) and what the
/// catalog may hold.
pub struct FleetFuzz {
    channel: Channel,
    catalog: Catalog,
    /// Host ids a valid hello has attached so far.
    allowed: Mutex<BTreeSet<String>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl FleetFuzz {
    /// Starts the coordinator with its catalog at `catalog_path` (a fresh file).
    pub async fn start(catalog_path: &Path) -> Self {
        // Migrated here first, so the coordinator's own open finds the schema in place.
        let catalog = Catalog::open(catalog_path).await.expect("catalog");
        let mut config = CoordinatorConfig::new(catalog_path);
        config.heartbeat_interval = Duration::from_millis(200);
        config.heartbeat_timeout = Duration::from_secs(2);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr: SocketAddr = listener.local_addr().expect("local addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            serve(config, listener, async {
                let _ = stopped.await;
            })
            .await
            .expect("coordinator");
        });
        let endpoint = Channel::from_shared(format!("http://{addr}")).expect("endpoint");
        let mut channel = None;
        for _ in 0..100 {
            if let Ok(c) = endpoint.connect().await {
                channel = Some(c);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            channel: channel.expect("the coordinator answers"),
            catalog,
            allowed: Mutex::new(BTreeSet::new()),
            _stop: stop,
        }
    }

    /// Sends the messages `data` stands for on one stream and checks the catalog.
    pub async fn run(&self, data: &[u8]) {
        let messages = messages(data);
        let valid = valid_hello(messages.first());
        if let Some(id) = &valid {
            self.lock().insert(id.clone());
        }
        let mut client = FleetClient::new(self.channel.clone());
        let attached = client
            .attach(tokio_stream::iter(messages))
            .await
            .map(tonic::Response::into_inner);
        let first: Option<CoordinatorMessage> = match attached {
            Ok(mut replies) => tokio::time::timeout(Duration::from_secs(5), replies.next())
                .await
                .ok()
                .flatten()
                .and_then(Result::ok),
            Err(_) => None,
        };
        let welcomed = matches!(
            first.and_then(|m| m.kind),
            Some(coordinator_message::Kind::Welcome(_))
        );
        assert_eq!(
            welcomed,
            valid.is_some(),
            "welcomed {welcomed}, but the first hello is valid: {valid:?}"
        );
        self.check(valid.as_deref()).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.allowed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Only hosts a valid hello attached are stored (`attached` among them), and nothing else.
    async fn check(&self, attached: Option<&str>) {
        let hosts = self.catalog.hosts().await.expect("hosts");
        let allowed = self.lock().clone();
        for h in &hosts {
            assert!(
                allowed.contains(&h.host_id),
                "host {:?} stored without a valid hello",
                h.host_id
            );
        }
        if let Some(id) = attached {
            assert!(
                hosts.iter().any(|h| h.host_id == id),
                "welcomed host {id:?} not stored"
            );
        }
        let counts: (i64, i64, i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM cells),
                    (SELECT count(*) FROM runs), (SELECT count(*) FROM results)",
        )
        .fetch_one(self.catalog.reader())
        .await
        .expect("counts");
        assert_eq!(counts, (0, 0, 0, 0), "host messages changed jobs or runs");
    }
}
