//! The dashboard's job list: each job's headline comparison, and a running job's progress
//! updated in place by the page's script from `/jobs.json`, without a reload. Chromium loads
//! the index through a relay that tells when the page has been served and holds the script's
//! reads of `/jobs.json` until the job has moved on in the catalog, so what the page shows in
//! the end can only have come from the script.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

use super::dashboard::{chromium, http, start};
use super::fixture;

/// A TCP relay to `to`. It holds every request for `/jobs.json` until `open` is true, and
/// sends the first line of each request it forwards as soon as the server's answer to it
/// begins to come back (the server has read the catalog for it by then).
async fn relay(
    to: SocketAddr,
    open: watch::Receiver<bool>,
) -> (SocketAddr, mpsc::UnboundedReceiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let tx = tx.clone();
            let mut open = open.clone();
            tokio::spawn(async move {
                let mut server = TcpStream::connect(to).await.expect("dashboard");
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match client.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let line = String::from_utf8_lossy(&buf[..n])
                        .lines()
                        .next()
                        .unwrap_or_default()
                        .to_string();
                    if line.starts_with("GET /jobs.json") && open.wait_for(|o| *o).await.is_err() {
                        return;
                    }
                    if server.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                    // Relay the answer until the server pauses or closes.
                    let mut told = false;
                    loop {
                        let wait = Duration::from_millis(if told { 200 } else { 30_000 });
                        match tokio::time::timeout(wait, server.read(&mut buf)).await {
                            Ok(Ok(0)) | Ok(Err(_)) => return,
                            Ok(Ok(n)) => {
                                if !told {
                                    told = true;
                                    let _ = tx.send(line.clone());
                                }
                                if client.write_all(&buf[..n]).await.is_err() {
                                    return;
                                }
                            }
                            Err(_) => break,
                        }
                    }
                }
            });
        }
    });
    (addr, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_job_list_shows_headlines_and_updates_a_running_job_in_place() {
    let f = fixture::build().await;
    // Job B is running with one run still to go.
    for sql in [
        "UPDATE jobs SET state = 'running' WHERE job_id = $1",
        "UPDATE runs SET state = 'queued' WHERE job_id = $1 AND sequence = (SELECT MAX(sequence) FROM runs WHERE job_id = $1)",
    ] {
        sqlx::query(sql)
            .bind(&f.job_b)
            .execute(&f.sql)
            .await
            .expect("job b running");
    }
    let addr = start(&f, &[]).await;
    let (head, body) = http(addr, "GET", "/jobs.json", &[], "").await;
    assert!(head.contains("application/json"), "{head}");
    let lines: serde_json::Value = serde_json::from_str(&body).expect("json");
    let line = |id: &str| {
        lines
            .as_array()
            .expect("array")
            .iter()
            .find(|l| l["job_id"] == id)
            .cloned()
            .expect("listed")
    };
    assert_eq!(line(&f.job_b)["state"], "running");
    assert_eq!(line(&f.job_b)["finished"], false);
    let a = line(&f.job_a);
    assert_eq!(a["state"], "done");
    let headline = a["headline"].as_str().expect("headline");
    assert!(
        headline.contains("+5.8%") && headline.ends_with("faster (+1 more: 1 inconclusive)"),
        "{headline}"
    );
    let before = line(&f.job_b)["runs"].as_str().expect("runs").to_string();

    let (open, gate) = watch::channel(false);
    let (proxy, mut served) = relay(addr, gate).await;
    let profile = tempfile::tempdir().expect("profile");
    let url = format!("http://{proxy}/");
    let browser = tokio::spawn({
        let profile = profile.path().to_path_buf();
        async move {
            chromium(
                &profile,
                &["--dump-dom", "--virtual-time-budget=10000"],
                &url,
            )
            .await
        }
    });
    // The index has been served: now the last run ends and the job is done.
    loop {
        let line = tokio::time::timeout(Duration::from_secs(60), served.recv())
            .await
            .expect("chromium loads the index")
            .expect("relay");
        if line.starts_with("GET / ") {
            break;
        }
    }
    for sql in [
        "UPDATE runs SET state = 'done' WHERE job_id = $1 AND state = 'queued'",
        "UPDATE jobs SET state = 'done' WHERE job_id = $1",
    ] {
        sqlx::query(sql)
            .bind(&f.job_b)
            .execute(&f.sql)
            .await
            .expect("job b done");
    }
    open.send(true).expect("relay");
    let dom = browser.await.expect("chromium");
    let row = dom
        .split(&format!("<tr data-job=\"{}\"", f.job_b))
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .expect("job b's row");
    assert!(row.contains("data-state=\"done\""), "{row}");
    assert!(
        row.contains("<span class=\"state-name\">done</span>"),
        "{row}"
    );
    let after = line(&f.job_b)["runs"].as_str().expect("runs").to_string();
    assert!(
        !row.contains(&format!(">{before}<")),
        "{before} still: {row}"
    );
    let (_, body) = http(addr, "GET", "/jobs.json", &[], "").await;
    let now: serde_json::Value = serde_json::from_str(&body).expect("json");
    let runs_now = now
        .as_array()
        .and_then(|a| a.iter().find(|l| l["job_id"] == f.job_b.as_str()))
        .and_then(|l| l["runs"].as_str())
        .expect("runs")
        .to_string();
    assert_ne!(runs_now, after, "the catalog moved on");
    assert!(row.contains(&format!(">{runs_now}<")), "{runs_now}: {row}");
}
