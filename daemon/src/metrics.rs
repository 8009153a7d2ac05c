//! Prometheus-style metrics: process-wide counters, the text exposition format, and a tiny
//! `/metrics` HTTP endpoint the agent and the worker serve with `--metrics-listen`.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::net::TcpListener;

/// A monotonically increasing (or, with [`Counter::dec`], gauge-like) process-wide count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
    /// For gauges: saturates at 0.
    pub fn dec(&self) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(1))
            });
    }
    /// For gauges.
    pub fn set(&self, v: u64) {
        self.0.store(v, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds (milliseconds) of [`Histogram`]'s buckets; above the last is `+Inf`.
pub const HISTOGRAM_BOUNDS_MS: [u64; 14] = [
    1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 30_000,
];

/// A process-wide histogram of durations in milliseconds with fixed buckets
/// ([`HISTOGRAM_BOUNDS_MS`]), exposed in seconds.
#[derive(Debug)]
pub struct Histogram {
    /// Per bucket (not cumulative); the last one is above every bound.
    buckets: [AtomicU64; HISTOGRAM_BOUNDS_MS.len() + 1],
    sum_ms: AtomicU64,
}

impl Histogram {
    pub const fn new() -> Self {
        Self {
            buckets: [const { AtomicU64::new(0) }; HISTOGRAM_BOUNDS_MS.len() + 1],
            sum_ms: AtomicU64::new(0),
        }
    }

    pub fn observe_ms(&self, ms: u64) {
        let i = HISTOGRAM_BOUNDS_MS
            .iter()
            .position(|&b| ms <= b)
            .unwrap_or(HISTOGRAM_BOUNDS_MS.len());
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// Cumulative counts per bound (the last is the total) and the sum in milliseconds.
    pub fn snapshot(&self) -> (Vec<u64>, u64) {
        let mut total = 0;
        let cumulative = self
            .buckets
            .iter()
            .map(|b| {
                total += b.load(Ordering::Relaxed);
                total
            })
            .collect();
        (cumulative, self.sum_ms.load(Ordering::Relaxed))
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// Heartbeats this host sent to the coordinator (every Fleet session of the process).
pub static HEARTBEATS_SENT: Counter = Counter::new();
/// Tasks this host ran to an outcome.
pub static TASKS_RUN: Counter = Counter::new();
/// Tasks that ended in an error outcome.
pub static TASKS_FAILED: Counter = Counter::new();

/// Builds a text exposition (format 0.0.4) one metric family at a time.
#[derive(Debug, Default)]
pub struct Exposition(String);

impl Exposition {
    pub fn new() -> Self {
        Self::default()
    }

    fn head(&mut self, name: &str, help: &str, kind: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}");
        let _ = writeln!(self.0, "# TYPE {name} {kind}");
    }

    pub fn counter(mut self, name: &str, help: &str, value: u64) -> Self {
        self.head(name, help, "counter");
        let _ = writeln!(self.0, "{name} {value}");
        self
    }

    pub fn gauge(mut self, name: &str, help: &str, value: u64) -> Self {
        self.head(name, help, "gauge");
        let _ = writeln!(self.0, "{name} {value}");
        self
    }

    /// A gauge family with one label (e.g. `state`), one sample per value.
    pub fn labeled_gauge(
        mut self,
        name: &str,
        help: &str,
        label: &str,
        rows: &[(String, u64)],
    ) -> Self {
        self.head(name, help, "gauge");
        for (value, n) in rows {
            let value = value
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            let _ = writeln!(self.0, "{name}{{{label}=\"{value}\"}} {n}");
        }
        self
    }

    /// A histogram family in seconds (`_bucket{le=...}`, `_sum`, `_count`).
    pub fn histogram(mut self, name: &str, help: &str, h: &Histogram) -> Self {
        self.head(name, help, "histogram");
        let (cumulative, sum_ms) = h.snapshot();
        for (bound, n) in HISTOGRAM_BOUNDS_MS.iter().zip(&cumulative) {
            let le = *bound as f64 / 1000.0;
            let _ = writeln!(self.0, "{name}_bucket{{le=\"{le}\"}} {n}");
        }
        let total = cumulative.last().copied().unwrap_or(0);
        let _ = writeln!(self.0, "{name}_bucket{{le=\"+Inf\"}} {total}");
        let _ = writeln!(self.0, "{name}_sum {}", sum_ms as f64 / 1000.0);
        let _ = writeln!(self.0, "{name}_count {total}");
        self
    }

    /// The counters every Fleet host has (heartbeats sent, tasks run and failed).
    pub fn fleet_host(self, prefix: &str) -> Self {
        self.counter(
            &format!("{prefix}_heartbeats_sent_total"),
            "Heartbeats sent to the coordinator.",
            HEARTBEATS_SENT.get(),
        )
        .counter(
            &format!("{prefix}_tasks_run_total"),
            "Tasks run to an outcome (success or error).",
            TASKS_RUN.get(),
        )
        .counter(
            &format!("{prefix}_tasks_failed_total"),
            "Tasks that ended in an error.",
            TASKS_FAILED.get(),
        )
    }

    pub fn finish(self) -> String {
        self.0
    }
}

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What renders the exposition text on every scrape.
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// The answer to one request: `GET /metrics` gets `render()`, anything else 404.
fn respond(
    req: &hyper::Request<hyper::body::Incoming>,
    render: &Render,
) -> hyper::Response<http_body_util::Full<hyper::body::Bytes>> {
    let (status, body) = if req.method() == hyper::Method::GET && req.uri().path() == "/metrics" {
        (hyper::StatusCode::OK, render())
    } else {
        (hyper::StatusCode::NOT_FOUND, "not found\n".to_string())
    };
    let mut resp = hyper::Response::new(http_body_util::Full::new(body.into()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(CONTENT_TYPE),
    );
    resp
}

/// Serves `GET /metrics` with `render()` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    render: Render,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => accepted?,
            () = &mut shutdown => return Ok(()),
        };
        let render = render.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let resp = respond(&req, &render);
                async move { Ok::<_, std::convert::Infallible>(resp) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(error = %e, "metrics connection ended");
            }
        });
    }
}

/// Binds `addr` and serves metrics in the background; for `--metrics-listen`.
pub async fn spawn(addr: &str, render: Render) -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "metrics listening");
    tokio::spawn(async move {
        if let Err(e) = serve(listener, render, std::future::pending()).await {
            tracing::error!(error = %e, "metrics endpoint stopped");
        }
    });
    Ok(local)
}

/// Fetches `path` from `addr` over plain HTTP/1.0 and returns (status line, body); for tests
/// and health checks, not a general client.
pub async fn http_get(
    addr: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> std::io::Result<(String, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    let mut req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        let _ = write!(req, "{k}: {v}\r\n");
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((text.as_str(), ""));
    Ok((head.to_string(), body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scrape_the_endpoint() {
        TASKS_RUN.inc();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let render: Render = Arc::new(|| {
            Exposition::new()
                .fleet_host("blocklab_test")
                .labeled_gauge("blocklab_x", "X.", "state", &[("a\"b".into(), 2)])
                .finish()
        });
        tokio::spawn(serve(listener, render, std::future::pending()));
        let (head, body) = http_get(addr, "/metrics", &[]).await.expect("get");
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{head}"
        );
        assert!(
            head.to_ascii_lowercase()
                .contains("text/plain; version=0.0.4"),
            "{head}"
        );
        assert!(
            body.contains("# TYPE blocklab_test_tasks_run_total counter"),
            "{body}"
        );
        let run: u64 = body
            .lines()
            .find_map(|l| l.strip_prefix("blocklab_test_tasks_run_total "))
            .expect("sample")
            .parse()
            .expect("number");
        assert!(run >= 1);
        assert!(body.contains("blocklab_x{state=\"a\\\"b\"} 2"), "{body}");
        let (head, _) = http_get(addr, "/nope", &[]).await.expect("get");
        assert!(head.contains(" 404"), "{head}");
    }
}
