//! What the benchmark reads about the coordinator process: its CPU time and resident memory
//! from /proc, and its `/metrics` (hosts up, jobs by state, the heartbeat lag histogram).

use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// CPU seconds (user + system) the process has used so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("coordinator stat");
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 of `rest` (0-based).
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    ticks as f64 / clock_ticks()
}

fn clock_ticks() -> f64 {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok());
    out.unwrap_or(100.0)
}

/// Resident memory of the process in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// CPU used by the process between two points, as a share of one core.
pub struct CpuWindow {
    pid: u32,
    cpu: f64,
    at: Instant,
}

impl CpuWindow {
    pub fn start(pid: u32) -> Self {
        Self {
            pid,
            cpu: cpu_seconds(pid),
            at: Instant::now(),
        }
    }

    /// Percent of one core since `start`.
    pub fn percent(&self) -> f64 {
        let used = cpu_seconds(self.pid) - self.cpu;
        100.0 * used / self.at.elapsed().as_secs_f64()
    }
}

/// The coordinator's `/metrics` text.
pub async fn metrics(addr: std::net::SocketAddr) -> String {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("metrics");
    let req = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    s.write_all(req.as_bytes()).await.expect("write");
    let mut body = String::new();
    s.read_to_string(&mut body).await.expect("read");
    body
}

/// The value of an unlabeled sample (or one with exactly these labels) in `text`.
pub fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The cumulative buckets of histogram `name`: (upper bound in seconds, count).
pub fn buckets(text: &str, name: &str) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{le=\"");
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix(&prefix)?;
            let (le, n) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, n.trim().parse().ok()?))
        })
        .collect()
}

/// The bucket bound (seconds) at quantile `q` of the observations between two scrapes:
/// "at most this"; `None` without observations.
pub fn quantile(before: &[(f64, f64)], after: &[(f64, f64)], q: f64) -> Option<f64> {
    let delta: Vec<(f64, f64)> = after
        .iter()
        .map(|&(le, n)| {
            let was = before.iter().find(|(b, _)| *b == le).map_or(0.0, |b| b.1);
            (le, n - was)
        })
        .collect();
    let total = delta.last()?.1;
    if total <= 0.0 {
        return None;
    }
    delta
        .iter()
        .find(|(_, n)| *n >= q * total)
        .map(|(le, _)| *le)
}
