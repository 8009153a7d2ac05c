//! The web dashboard in a real browser: headless Chromium loads the index and a finished
//! job's page from a dashboard serving a fixture catalog; the job's page is also saved as a
//! PNG test artifact ($BLOCKLAB_TEST_ARTIFACTS or the target dir's test-artifacts/dashboard.png);
//! the history page and a job with a client ladder likewise (history.png, ladder.png). The
//! job's page at 1400 px wide: no horizontal scrollbar, the hosts' warnings and the charts
//! near the top (report-1400.png). And the sign-in: read tokens only, through the form, a
//! session cookie, never a token in a URL.

use super::{fixture, ladder};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use blocklab_coordinator::dashboard::{self, Dashboard};
use blocklab_coordinator::fleet::{Liveness, Registry};
use blocklab_daemon::security::{ApiToken, Scope, Secret};

const CHROMIUM: &str = "/usr/bin/chromium";
const TOKEN: &str = "dashboard-test-token-0123456789";

pub(super) async fn start(f: &fixture::Fixture, tokens: &[ApiToken]) -> SocketAddr {
    let registry = Registry::new(Liveness {
        heartbeat_interval: Duration::from_secs(2),
        heartbeat_timeout: Duration::from_secs(10),
    });
    let board = Dashboard::new(f.catalog.clone(), registry, f.location.to_string(), tokens);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(dashboard::serve(
        board,
        listener,
        None,
        std::future::pending(),
    ));
    addr
}

/// Where a screenshot goes: $BLOCKLAB_TEST_ARTIFACTS, else the target dir's `test-artifacts/`.
fn artifact(name: &str) -> PathBuf {
    let dir = match std::env::var_os("BLOCKLAB_TEST_ARTIFACTS") {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("CARGO_TARGET_DIR") {
            Some(t) => PathBuf::from(t).join("test-artifacts"),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-artifacts"),
        },
    };
    dir.join(name)
}

/// Saves a screenshot of `url` as the artifact `name` and checks it is a real PNG.
async fn screenshot(profile: &Path, url: &str, name: &str, height: u32) {
    screenshot_at(profile, url, name, 1280, height).await;
}

/// [`screenshot`] with the window `width` px wide.
async fn screenshot_at(profile: &Path, url: &str, name: &str, width: u32, height: u32) {
    let png = artifact(name);
    std::fs::create_dir_all(png.parent().expect("dir")).expect("artifact dir");
    let _ = std::fs::remove_file(&png);
    chromium(
        profile,
        &[
            &format!("--screenshot={}", png.display()),
            &format!("--window-size={width},{height}"),
            "--hide-scrollbars",
        ],
        url,
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

/// Runs headless Chromium with `extra` arguments on `url`; returns its stdout.
pub(super) async fn chromium(profile: &Path, extra: &[&str], url: &str) -> String {
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
    let addr = start(&f, &[]).await;
    let profile = tempfile::tempdir().expect("profile");

    let index = chromium(profile.path(), &["--dump-dom"], &format!("http://{addr}/")).await;
    assert!(index.contains("blocklab dashboard"), "{index}");
    assert!(
        index.contains(&format!("data-job=\"{}\" data-state=\"done\"", f.job_a)),
        "the index lists the finished job:\n{index}"
    );
    assert!(index.contains("page-sizes-a") && index.contains("Test CPU 9000"));
    assert!(index.contains("data-host=\"db1\"") && index.contains(">down<"));

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

    screenshot(profile.path(), &url, "dashboard.png", 900).await;
}

/// Measures the page's layout in the browser: written into the DOM by a script at its end.
const MEASURE: &str = "<script>(function(){var d=document.documentElement;\
var top=function(s){var e=document.querySelector(s);return e?Math.round(e.getBoundingClientRect().top):-1;};\
var p=document.createElement('pre');p.id='layout';p.textContent=['scroll_width='+d.scrollWidth,\
'client_width='+d.clientWidth,'inner_width='+window.innerWidth,'warnings='+top('ul.host-warnings'),\
'results='+top('table.results'),'charts='+top('.charts svg'),'per_metric='+top('#per-metric'),\
'own_workload='+top('#own-workload'),'hosts='+top('#hosts')].join(' ');\
document.body.appendChild(p);})();</script>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_lays_the_job_page_out_in_1400_px() {
    let f = fixture::build().await;
    let addr = start(&f, &[]).await;
    let profile = tempfile::tempdir().expect("profile");
    let path = format!("/jobs/{}", f.job_a);
    let (head, body) = http(addr, "GET", &path, &[], "").await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    // The page is self-contained: a copy with the measuring script lays out as served.
    let page = profile.path().join("job.html");
    std::fs::write(&page, body.replace("</body>", &format!("{MEASURE}</body>"))).expect("page");
    let dom = chromium(
        profile.path(),
        &["--dump-dom", "--window-size=1400,900"],
        &format!("file://{}", page.display()),
    )
    .await;
    let layout = dom
        .split("<pre id=\"layout\">")
        .nth(1)
        .and_then(|t| t.split("</pre>").next())
        .unwrap_or_else(|| panic!("no layout:\n{dom}"));
    let px = |k: &str| -> i64 {
        layout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{k} in {layout}"))
    };
    eprintln!("the job page at 1400 px: {layout}");
    assert!((1300..=1400).contains(&px("inner_width")), "{layout}");
    assert!(
        px("scroll_width") <= px("client_width") && px("scroll_width") <= 1400,
        "a horizontal scrollbar at 1400 px: {layout}"
    );
    let (warnings, results, charts) = (px("warnings"), px("results"), px("charts"));
    assert!(warnings >= 0 && warnings < results, "{layout}");
    assert!(results < charts && charts < 1400, "{layout}");
    for after in ["per_metric", "own_workload", "hosts"] {
        assert!(px(after) < 0 || charts < px(after), "{after}: {layout}");
    }
    assert!(px("hosts") > charts, "{layout}");
    screenshot_at(
        profile.path(),
        &format!("http://{addr}{path}"),
        "report-1400.png",
        1400,
        1800,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromium_shows_the_history_and_a_ladders_knee() {
    let l = ladder::build().await;
    let addr = start(&l.f, &[]).await;
    let profile = tempfile::tempdir().expect("profile");
    let rows = |page: &str, job: &str| {
        page.matches(&format!("data-job=\"{job}\" data-cell="))
            .count()
    };

    // Every compared cell of every job: the ladder's 16K at 4 client counts, 16K and 32K of
    // job A, 4K and 16K of job B, and 16K of the db2 job and of its rerun.
    let url = format!("http://{addr}/history/tps");
    let page = chromium(profile.path(), &["--dump-dom"], &url).await;
    assert!(page.contains("10 compared cells in 5 jobs"), "{page}");
    assert_eq!(
        page.matches("<g class=\"forest-row\"").count(),
        10,
        "{page}"
    );
    for (job, n) in [
        (&l.ladder, 4),
        (&l.f.job_a, 2),
        (&l.f.job_b, 2),
        (&l.original, 1),
        (&l.rerun, 1),
    ] {
        assert_eq!(rows(&page, job), n, "rows of {job}:\n{page}");
    }
    // Table rows in page order: the rerun's row comes right after its original's.
    let order: Vec<&str> = page
        .split("data-job=\"")
        .skip(1)
        .filter(|s| s.get(36..).is_some_and(|t| t.starts_with("\" data-cell=")))
        .map(|s| &s[..36])
        .collect();
    assert_eq!(order.len(), 10, "{order:?}");
    let at = order
        .iter()
        .position(|j| *j == l.original)
        .expect("original");
    assert_eq!(
        order.get(at + 1),
        Some(&l.rerun.as_str()),
        "the rerun follows its original"
    );
    assert!(
        page.contains(&format!("href=\"/compare/{}/{}\"", l.original, l.rerun)),
        "{page}"
    );
    // The filters list the values present.
    for v in ["db1", "db2", "15.18", "16.4", "select-only", "tpcb-like"] {
        assert!(
            page.contains(&format!("<option value=\"{v}\">{v}</option>")),
            "{v}: {page}"
        );
    }
    // +15.0% [..] faster on db2, in the table and on the forest.
    assert!(page.contains("+15.0% faster"), "{page}");

    let on_db2 = chromium(
        profile.path(),
        &["--dump-dom"],
        &format!("http://{addr}/history/tps?host=db2&version=16.4"),
    )
    .await;
    assert!(on_db2.contains("2 compared cells in 2 jobs"), "{on_db2}");
    assert_eq!(rows(&on_db2, &l.rerun), 1);
    assert!(
        on_db2.contains("<option value=\"db2\" selected=\"\">db2</option>"),
        "{on_db2}"
    );
    screenshot(profile.path(), &url, "history.png", 1000).await;

    // A filter value no job has, and an unknown filter, are refused naming what is allowed.
    let (head, body) = http(addr, "GET", "/history/tps?host=nope", &[], "").await;
    assert!(head.starts_with("HTTP/1.0 400"), "{head}");
    assert!(
        body.contains("host: no job of this metric has &quot;nope&quot;; present: db1, db2"),
        "{body}"
    );
    let (head, body) = http(addr, "GET", "/history/tps?colour=red", &[], "").await;
    assert!(head.starts_with("HTTP/1.0 400"), "{head}");
    assert!(body.contains("allowed: host, version, workload"), "{body}");
    let (head, _) = http(addr, "GET", "/history", &[], "").await;
    assert!(
        head.starts_with("HTTP/1.0 303") && head.contains("/history/tps"),
        "{head}"
    );

    // The rerun compared with its original.
    let (head, body) = http(
        addr,
        "GET",
        &format!("/compare/{}/{}", l.original, l.rerun),
        &[],
        "",
    )
    .await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(
        body.contains("on-db2-rerun") && body.contains("<table class=\"results\""),
        "{body}"
    );

    // The ladder's page: a chart per page size, the knee named and marked.
    let url = format!("http://{addr}/jobs/{}", l.ladder);
    let page = chromium(profile.path(), &["--dump-dom"], &url).await;
    assert_eq!(page.matches("data-chart=\"scaling\"").count(), 2, "{page}");
    for want in [
        "bs=8K wal=8K: tps knee at 4 clients",
        "bs=16K wal=8K: tps knee at 8 clients",
        "class=\"knee\" data-knee=\"4\"",
        "class=\"knee\" data-knee=\"8\"",
        "knee: 4 clients",
        "href=\"/history/tps\"",
    ] {
        assert!(page.contains(want), "ladder page lacks {want:?}:\n{page}");
    }
    screenshot(profile.path(), &url, "ladder.png", 2200).await;
}

/// One HTTP/1.0 request; returns the head and the body.
pub(super) async fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    (head.to_string(), body.to_string())
}

/// The `blocklab_session=...` pair of a response's Set-Cookie, and the whole header line.
fn set_cookie(head: &str) -> (String, String) {
    let line = head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("no Set-Cookie in {head}"))
        .to_string();
    let pair = line
        .split_once(':')
        .map(|(_, v)| v.trim())
        .and_then(|v| v.split(';').next())
        .expect("cookie")
        .to_string();
    (pair, line)
}

const SUBMIT_TOKEN: &str = "dashboard-submit-token-0123456789";

fn tokens() -> Vec<ApiToken> {
    vec![
        ApiToken::new(Scope::Read, Secret::new(TOKEN, "test").expect("token")),
        ApiToken::new(
            Scope::Submit,
            Secret::new(SUBMIT_TOKEN, "test").expect("token"),
        ),
    ]
}

#[tokio::test]
async fn read_tokens_sign_in_through_the_form_never_the_url() {
    let f = fixture::build().await;
    let addr = start(&f, &tokens()).await;
    let job_path = format!("/jobs/{}", f.job_a);
    // Without a session every page answers 401 with the sign-in form.
    for path in ["/", "/metrics", job_path.as_str()] {
        let (head, body) = http(addr, "GET", path, &[], "").await;
        assert!(head.starts_with("HTTP/1.0 401"), "{path}: {head}");
        assert!(body.contains("action=\"/login\""), "{body}");
        assert!(!body.contains("page-sizes-a"), "{path} leaks the catalog");
    }
    // A token in the URL is refused, even a good one, on every path.
    for path in [
        format!("/?token={TOKEN}"),
        format!("/login?token={TOKEN}"),
        format!("{job_path}?a=1&token={TOKEN}"),
    ] {
        let (head, body) = http(addr, "GET", &path, &[], "").await;
        assert!(head.starts_with("HTTP/1.0 400"), "{path}: {head}");
        assert!(
            body.contains("a token in the URL is refused"),
            "{path}: {body}"
        );
        assert!(!head.to_ascii_lowercase().contains("set-cookie"), "{head}");
    }
    // A submit token and a wrong token do not sign in.
    let (head, body) = http(
        addr,
        "POST",
        "/login",
        &[],
        &format!("token={SUBMIT_TOKEN}"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.0 403"), "{head}");
    assert!(
        body.contains("the dashboard takes read tokens only; this token&#39;s scope is submit")
            || body.contains("the dashboard takes read tokens only; this token's scope is submit"),
        "{body}"
    );
    let (head, _) = http(addr, "POST", "/login", &[], "token=wrong-token-0123456789").await;
    assert!(head.starts_with("HTTP/1.0 401"), "{head}");
    assert!(!head.to_ascii_lowercase().contains("set-cookie"), "{head}");

    // A read token signs in: a session cookie, not the token.
    let (head, _) = http(addr, "POST", "/login", &[], &format!("token={TOKEN}")).await;
    assert!(head.starts_with("HTTP/1.0 303"), "{head}");
    assert!(head.contains("location: /"), "{head}");
    let (pair, line) = set_cookie(&head);
    for attribute in [
        "HttpOnly",
        "Secure",
        "SameSite=Strict",
        "Path=/",
        "Max-Age=28800",
    ] {
        assert!(
            line.split(';').any(|a| a.trim() == attribute),
            "{attribute} missing: {line}"
        );
    }
    let id = pair
        .strip_prefix("blocklab_session=")
        .expect("session cookie");
    assert_eq!(id.len(), 64, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(!line.contains(TOKEN), "the cookie holds the token");
    let (head, body) = http(addr, "GET", "/", &[("Cookie", &pair)], "").await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(body.contains("page-sizes-b"), "{body}");
    let (head, body) = http(addr, "GET", &job_path, &[("Cookie", &pair)], "").await;
    assert!(
        head.starts_with("HTTP/1.0 200") && body.contains("<svg"),
        "{head}"
    );
    let (head, _) = http(
        addr,
        "GET",
        "/jobs/00000000-0000-0000-0000-000000000000",
        &[("Cookie", &pair)],
        "",
    )
    .await;
    assert!(head.starts_with("HTTP/1.0 404"), "{head}");
    // The old token cookie means nothing.
    let old = format!("blocklab_token={TOKEN}");
    let (head, _) = http(addr, "GET", "/", &[("Cookie", &old)], "").await;
    assert!(head.starts_with("HTTP/1.0 401"), "{head}");

    // Scrapers: /metrics takes a read token in Authorization (only there, only read).
    let bearer = format!("Bearer {TOKEN}");
    let (head, body) = http(addr, "GET", "/metrics", &[("Authorization", &bearer)], "").await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
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
    let (head, _) = http(addr, "GET", "/", &[("Authorization", &bearer)], "").await;
    assert!(
        head.starts_with("HTTP/1.0 401"),
        "pages need a session: {head}"
    );
    let submit = format!("Bearer {SUBMIT_TOKEN}");
    let (head, _) = http(addr, "GET", "/metrics", &[("Authorization", &submit)], "").await;
    assert!(head.starts_with("HTTP/1.0 403"), "{head}");

    // Signing out ends the session.
    let (head, _) = http(addr, "POST", "/logout", &[("Cookie", &pair)], "").await;
    assert!(head.starts_with("HTTP/1.0 303"), "{head}");
    assert!(set_cookie(&head).1.contains("Max-Age=0"), "{head}");
    let (head, _) = http(addr, "GET", "/", &[("Cookie", &pair)], "").await;
    assert!(head.starts_with("HTTP/1.0 401"), "{head}");

    // Without API tokens the dashboard is open, and still refuses a token in the URL.
    let open = start(&f, &[]).await;
    let (head, body) = http(open, "GET", "/", &[], "").await;
    assert!(
        head.starts_with("HTTP/1.0 200") && body.contains("page-sizes-a"),
        "{head}"
    );
    let (head, _) = http(open, "GET", "/?token=anything", &[], "").await;
    assert!(head.starts_with("HTTP/1.0 400"), "{head}");
}

#[tokio::test]
async fn sessions_expire() {
    let f = fixture::build().await;
    let registry = Registry::new(Liveness {
        heartbeat_interval: Duration::from_secs(2),
        heartbeat_timeout: Duration::from_secs(10),
    });
    let board = Dashboard::new(
        f.catalog.clone(),
        registry,
        f.location.to_string(),
        &tokens(),
    )
    .with_session_ttl(Duration::from_millis(500));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(dashboard::serve(
        board,
        listener,
        None,
        std::future::pending(),
    ));
    let (head, _) = http(addr, "POST", "/login", &[], &format!("token={TOKEN}")).await;
    let (pair, line) = set_cookie(&head);
    assert!(line.contains("Max-Age=0;"), "{line}");
    let (head, _) = http(addr, "GET", "/", &[("Cookie", &pair)], "").await;
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (head, _) = http(addr, "GET", "/", &[("Cookie", &pair)], "").await;
    assert!(
        head.starts_with("HTTP/1.0 401"),
        "an expired session passes: {head}"
    );
}
