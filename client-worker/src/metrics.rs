//! The worker's Prometheus-style metrics (`serve --metrics-listen`): loads run, and the Fleet
//! counters (heartbeats sent, tasks run and failed).

use blocklab_daemon::metrics::{Counter, Exposition};

/// `RunLoad` tasks started by this worker.
pub static LOADS_RUN: Counter = Counter::new();

/// The exposition text.
pub fn render() -> String {
    Exposition::new()
        .counter(
            "blocklab_worker_loads_run_total",
            "Load tasks (RunLoad) started.",
            LOADS_RUN.get(),
        )
        .fleet_host("blocklab_worker")
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scrape_worker_metrics() {
        let addr = blocklab_daemon::metrics::spawn("127.0.0.1:0", std::sync::Arc::new(render))
            .await
            .expect("listen");
        let (head, body) = blocklab_daemon::metrics::http_get(addr, "/metrics", &[])
            .await
            .expect("scrape");
        assert!(head.contains(" 200"), "{head}");
        for want in [
            "# TYPE blocklab_worker_loads_run_total counter",
            "blocklab_worker_heartbeats_sent_total ",
            "blocklab_worker_tasks_run_total ",
            "blocklab_worker_tasks_failed_total ",
        ] {
            assert!(body.contains(want), "lacks {want:?}:\n{body}");
        }
    }
}
