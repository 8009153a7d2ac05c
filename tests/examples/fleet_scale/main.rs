//! The coordinator at fleet scale: the real `blocklab-coordinator` binary (its own process, so
//! its CPU and memory are its own), HOSTS simulated hosts attached to it from this process
//! (half agents, half workers; each a real gRPC stream with a heartbeat every second, through
//! the shared fleet token), first idle, then with JOBS small jobs kept in flight through
//! Control (each 1 cell x REPS repetitions on one agent and one worker, answered at once with
//! well-formed fake results, see `sim.rs`).
//!
//!   cargo run --release -p blocklab-tests --example fleet_scale -- [HOSTS] [JOBS] [SECONDS]
//!
//! Prints one line per phase: coordinator CPU (% of one core, from /proc), RSS, heartbeat
//! lag (the coordinator's `blocklab_heartbeat_lag_seconds`: bucket bounds), and under load
//! the dispatch latencies the hosts saw (`sim.rs` defines them) and runs per second.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use blocklab_daemon::fleet::{SessionConfig, run_session};
use blocklab_daemon::security::Secret;
use blocklab_proto::v1::control_client::ControlClient;
use blocklab_proto::v1::{GetJobRequest, Hello, Role, SubmitJobRequest};
use tokio::sync::watch;

mod observe;
mod sim;

const TOKEN: &str = "fleet-scale-benchmark-shared-token";

fn spec(n: u64, reps: u32) -> String {
    format!(
        r#"
name = "fleet-scale-{n}"
repetitions = {reps}
[source]
tarball = "/nonexistent/fleet-scale/{n}.tar.bz2"
[matrix]
block_size_kb = [8]
clients = [4]
[workload]
builtin = "select-only"
scale = 1
duration = "10s"
[placement]
client_workers = 1
"#
    )
}

fn free_port() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
}

struct Coordinator {
    child: std::process::Child,
    grpc: String,
    metrics: std::net::SocketAddr,
}

fn start_coordinator(dir: &std::path::Path) -> Coordinator {
    let token_file = dir.join("fleet.token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("token file");
    std::fs::set_permissions(
        &token_file,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .expect("token file mode");
    let (grpc, metrics) = (free_port(), free_port());
    let log = std::fs::File::create(dir.join("coordinator.log")).expect("log");
    let child = std::process::Command::new(blocklab_tests::binary("blocklab-coordinator"))
        .args(["--listen", &grpc.to_string()])
        .arg("--catalog")
        .arg(dir.join("catalog.db"))
        .args(["--heartbeat-interval", "1s", "--heartbeat-timeout", "10s"])
        .arg("--fleet-token-file")
        .arg(&token_file)
        .args(["--dashboard-listen", &metrics.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start blocklab-coordinator");
    Coordinator {
        child,
        grpc: format!("http://{grpc}"),
        metrics,
    }
}

async fn wait_hosts(metrics: std::net::SocketAddr, hosts: usize) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while tokio::net::TcpStream::connect(metrics).await.is_err() {
        assert!(Instant::now() < deadline, "the coordinator did not start");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    loop {
        let text = tokio::time::timeout(Duration::from_secs(5), observe::metrics(metrics)).await;
        if let Ok(text) = text
            && observe::sample(&text, "blocklab_hosts_up") as usize >= hosts
        {
            return;
        }
        assert!(Instant::now() < deadline, "hosts did not all attach");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Keeps submitting jobs one after another until `until`; returns (jobs done, runs done,
/// jobs not done with their error).
async fn submitter(
    mut c: ControlClient<tonic::transport::Channel>,
    probe: Arc<sim::Probe>,
    first: u64,
    stride: u64,
    reps: u32,
    until: Instant,
) -> (u64, u64, Vec<String>) {
    let (mut done, mut runs, mut bad) = (0, 0, Vec::new());
    let mut n = first;
    while Instant::now() < until {
        let spec = spec(n, reps);
        probe.submitting(&format!("/nonexistent/fleet-scale/{n}.tar.bz2"));
        let job_id = c
            .submit_job(SubmitJobRequest {
                spec_toml: spec,
                files: Default::default(),
            })
            .await
            .expect("submit")
            .into_inner()
            .job_id;
        n += stride;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let job = c
                .get_job(GetJobRequest {
                    job_id: job_id.clone(),
                    run: 0,
                })
                .await
                .expect("get job")
                .into_inner()
                .job
                .expect("summary");
            match job.state.as_str() {
                "done" => {
                    done += 1;
                    runs += u64::from(job.runs_done);
                    break;
                }
                "failed" | "cancelled" => {
                    bad.push(format!("{job_id}: {} {}", job.state, job.error));
                    break;
                }
                _ => {}
            }
        }
    }
    (done, runs, bad)
}

fn ms(h: &std::sync::Mutex<hdrhistogram::Histogram<u64>>, q: f64) -> String {
    let h = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if h.is_empty() {
        "-".into()
    } else {
        format!("{:.1}", h.value_at_quantile(q) as f64 / 1000.0)
    }
}

fn lag(before: &str, after: &str, q: f64) -> String {
    let name = "blocklab_heartbeat_lag_seconds";
    match observe::quantile(
        &observe::buckets(before, name),
        &observe::buckets(after, name),
        q,
    ) {
        Some(s) => format!("<={:.0}", s * 1000.0),
        None => "-".into(),
    }
}

/// With FLEET_SCALE_PERF=FILE and FLEET_SCALE_PERF_PHASE=idle|load (default load): `perf
/// record -g` on the coordinator over that phase.
fn profile(phase: &str, pid: u32, seconds: u64) -> Option<std::process::Child> {
    let file = std::env::var("FLEET_SCALE_PERF").ok()?;
    let wanted = std::env::var("FLEET_SCALE_PERF_PHASE").unwrap_or_else(|_| "load".into());
    if wanted != phase {
        return None;
    }
    std::process::Command::new("perf")
        .args([
            "record",
            "-g",
            "-F",
            "499",
            "-o",
            &file,
            "-p",
            &pid.to_string(),
        ])
        .args(["--", "sleep", &seconds.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()
}

fn finish_profile(perf: Option<std::process::Child>) {
    if let Some(mut p) = perf {
        let _ = p.wait();
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hosts: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let jobs: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(20);
    let seconds: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(30);
    let reps = 5;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut coord = start_coordinator(dir.path());
    let pid = coord.child.id();
    let (stop, stopped) = watch::channel(false);
    let probe = sim::Probe::new();
    let token = Secret::new(TOKEN, "benchmark").expect("token");
    let attach = Instant::now();
    for i in 0..hosts {
        let agent = i < hosts / 2;
        let host_id = if agent {
            format!("sim-agent-{i:04}")
        } else {
            format!("sim-worker-{i:04}")
        };
        let config = SessionConfig {
            coordinator: coord.grpc.clone(),
            hello: Hello {
                host_id: host_id.clone(),
                role: if agent { Role::Agent } else { Role::Worker } as i32,
                labels: Vec::new(),
                version: "sim".into(),
                address: "127.0.0.1".into(),
                facts_json: "{}".into(),
            },
            heartbeat_interval: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5),
            fence_after: Duration::from_secs(10),
            tls: None,
            token: Some(token.clone()),
        };
        let handler = Arc::new(sim::SimHost {
            host_id,
            agent,
            probe: probe.clone(),
        });
        let mut stopped = stopped.clone();
        tokio::spawn(run_session(config, handler, async move {
            let _ = stopped.wait_for(|s| *s).await;
        }));
    }
    wait_hosts(coord.metrics, hosts).await;
    let attached = attach.elapsed();
    tokio::time::sleep(Duration::from_secs(5)).await;

    // Idle: heartbeats only.
    let m0 = observe::metrics(coord.metrics).await;
    let perf = profile("idle", pid, seconds);
    let cpu = observe::CpuWindow::start(pid);
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let idle_cpu = cpu.percent();
    finish_profile(perf);
    let m1 = observe::metrics(coord.metrics).await;
    let idle_rss = observe::rss_mib(pid);
    let hb = observe::sample(&m1, "blocklab_heartbeats_received_total")
        - observe::sample(&m0, "blocklab_heartbeats_received_total");

    // Load: `jobs` jobs in flight at a time.
    let c = ControlClient::connect(coord.grpc.clone())
        .await
        .expect("control");
    probe.recording.store(true, Ordering::Relaxed);
    let perf = profile("load", pid, seconds);
    let cpu = observe::CpuWindow::start(pid);
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let submitters: Vec<_> = (0..jobs)
        .map(|k| tokio::spawn(submitter(c.clone(), probe.clone(), k, jobs, reps, until)))
        .collect();
    tokio::time::sleep_until(until.into()).await;
    let load_cpu = cpu.percent();
    finish_profile(perf);
    probe.recording.store(false, Ordering::Relaxed);
    let m2 = observe::metrics(coord.metrics).await;
    let load_rss = observe::rss_mib(pid);
    let (mut done, mut runs, mut bad) = (0, 0, Vec::new());
    for s in submitters {
        let (d, r, b) = s.await.expect("submitter");
        done += d;
        runs += r;
        bad.extend(b);
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = stop.send(true);

    println!(
        "{hosts} hosts attached in {attached:.1?}; {:.0} heartbeats/s taken in while idle",
        hb / seconds as f64
    );
    println!(
        "| hosts | phase | coordinator CPU (% of a core) | RSS MiB | heartbeat lag p50 / p99 ms | dispatch within a run p50 / p99 ms | between runs p50 / p99 ms | submit to first task p50 / p99 ms | runs/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {hosts} | idle | {idle_cpu:.1} | {idle_rss:.0} | {} / {} | - | - | - | - |",
        lag(&m0, &m1, 0.5),
        lag(&m0, &m1, 0.99)
    );
    println!(
        "| {hosts} | {jobs} jobs in flight | {load_cpu:.1} | {load_rss:.0} | {} / {} | {} / {} | {} / {} | {} / {} | {:.1} |",
        lag(&m1, &m2, 0.5),
        lag(&m1, &m2, 0.99),
        ms(&probe.within, 0.5),
        ms(&probe.within, 0.99),
        ms(&probe.between, 0.5),
        ms(&probe.between, 0.99),
        ms(&probe.first_task, 0.5),
        ms(&probe.first_task, 0.99),
        runs as f64 / elapsed,
    );
    println!(
        "{done} jobs done ({runs} runs, {} tasks answered), {} not done",
        probe.tasks.load(Ordering::Relaxed),
        bad.len()
    );
    for b in bad.iter().take(5) {
        println!("  not done: {b}");
    }
    if let Ok(dest) = std::env::var("FLEET_SCALE_KEEP_LOG") {
        let _ = std::fs::copy(dir.path().join("coordinator.log"), dest);
    }
    let _ = coord.child.kill();
    let _ = coord.child.wait();
    if !bad.is_empty() {
        std::process::exit(1);
    }
}
