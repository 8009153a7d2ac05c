//! The web dashboard in a real browser: headless Chromium loads the index and a finished
//! job's page from a dashboard serving a fixture catalog, behind an API token; the job's
//! page is also saved as a PNG test artifact ($BLOCKLAB_TEST_ARTIFACTS or
//! target/test-artifacts/dashboard.png).

use super::fixture;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use blocklab_coordinator::dashboard::{self, Dashboard};
use blocklab_coordinator::fleet::{Liveness, Registry};
use blocklab_daemon::metrics::http_get;
use blocklab_daemon::security::{ApiToken, Scope, Secret};

const CHROMIUM: &str = "/usr/bin/chromium";
const TOKEN: &str = "dashboard-test-token-0123456789";

async fn start(f: &fixture::Fixture, tokens: &[ApiToken]) -> SocketAddr {
    let registry = Registry::new(Liveness {
        heartbeat_interval: Duration::from_secs(2),
        heartbeat_timeout: Duration::from_secs(10),
    });
    let board = Dashboard::new(
        f.catalog.clone(),
        registry,
        f.path.display().to_string(),
        tokens,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(dashboard::serve(board, listener, std::future::pending()));
    addr
}

fn artifact_path() -> PathBuf {
    match std::env::var_os("BLOCKLAB_TEST_ARTIFACTS") {
        Some(dir) => PathBuf::from(dir).join("dashboard.png"),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts/dashboard.png")
        }
    }
}

/// Runs headless Chromium with `extra` arguments on `url`; returns its stdout.
async fn chromium(profile: &Path, extra: &[&str], url: &str) -> String {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the dashboard test needs headless Chromium; deploy/setup.sh installs it (Debian package `chromium`)"
    );
    let mut cmd = tokio::process::Command::new(CHROMIUM);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(url)
    .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(90), cmd.output())
        .await
        .expect("chromium timed out")
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium {extra:?} {url}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_finished_job_with_chart() {
    let f = fixture::build().await;
    let secret = ApiToken::new(Scope::Read, Secret::new(TOKEN, "test").expect("token"));
    let addr = start(&f, &[secret]).await;
    let profile = tempfile::tempdir().expect("profile");

    let index = chromium(
        profile.path(),
        &["--dump-dom"],
        &format!("http://{addr}/?token={TOKEN}"),
    )
    .await;
    assert!(index.contains("blocklab dashboard"), "{index}");
    assert!(
        index.contains(&format!("data-job=\"{}\" data-state=\"done\"", f.job_a)),
        "the index lists the finished job:\n{index}"
    );
    assert!(index.contains("page-sizes-a") && index.contains("Test CPU 9000"));
    assert!(index.contains("data-host=\"db1\"") && index.contains(">down<"));

    // The token cookie set by ?token= carries the browser to the job's page.
    let url = format!("http://{addr}/jobs/{}", f.job_a);
    let page = chromium(profile.path(), &["--dump-dom"], &url).await;
    assert!(page.contains("<svg"), "the job page has its chart:\n{page}");
    assert!(page.contains("class=\"errorbar\""), "{page}");
    for want in [
        "<table class=\"results\"",
        "faster",
        "+5.8%",
        "page-sizes-a",
        "q-value",
        "TOST q (±2.0%)",
        "1 faster, 0 slower, 0 equivalent, 1 inconclusive",
    ] {
        assert!(page.contains(want), "job page lacks {want:?}");
    }

    let png = artifact_path();
    std::fs::create_dir_all(png.parent().expect("dir")).expect("artifact dir");
    let _ = std::fs::remove_file(&png);
    chromium(
        profile.path(),
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1280,900",
            "--hide-scrollbars",
        ],
        &format!("{url}?token={TOKEN}"),
    )
    .await;
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "{}",
        png.display()
    );
    eprintln!("dashboard screenshot: {}", png.display());
}

#[tokio::test]
async fn token_is_required_and_metrics_are_served() {
    let f = fixture::build().await;
    let secret = ApiToken::new(Scope::Read, Secret::new(TOKEN, "test").expect("token"));
    let addr = start(&f, &[secret]).await;
    for path in ["/", "/metrics", &format!("/jobs/{}", f.job_a)] {
        let (head, body) = http_get(addr, path, &[]).await.expect("get");
        assert!(head.contains(" 401"), "{path}: {head}");
        assert!(body.contains("?token="), "{body}");
    }
    let (head, _) = http_get(addr, "/", &[("Authorization", "Bearer wrong")])
        .await
        .expect("get");
    assert!(head.contains(" 401"), "{head}");
    let bearer = format!("Bearer {TOKEN}");
    let (head, body) = http_get(addr, "/metrics", &[("Authorization", &bearer)])
        .await
        .expect("get");
    assert!(head.contains(" 200"), "{head}");
    for want in [
        "# TYPE blocklab_jobs gauge",
        "blocklab_jobs{state=\"done\"} 2",
        "blocklab_runs{state=\"done\"} 18",
        "blocklab_hosts_up 0",
        "# TYPE blocklab_heartbeats_received_total counter",
        "blocklab_task_errors_total ",
    ] {
        assert!(body.contains(want), "metrics lack {want:?}:\n{body}");
    }
    let cookie = format!("blocklab_token={TOKEN}");
    let (head, body) = http_get(addr, "/", &[("Cookie", &cookie)])
        .await
        .expect("get");
    assert!(
        head.contains(" 200") && body.contains("page-sizes-b"),
        "{head}"
    );
    let (head, _) = http_get(
        addr,
        "/jobs/00000000-0000-0000-0000-000000000000",
        &[("Authorization", &bearer)],
    )
    .await
    .expect("get");
    assert!(head.contains(" 404"), "{head}");

    // Without API tokens the dashboard is open.
    let open = start(&f, &[]).await;
    let (head, body) = http_get(open, "/", &[]).await.expect("get");
    assert!(
        head.contains(" 200") && body.contains("page-sizes-a"),
        "{head}"
    );
}
