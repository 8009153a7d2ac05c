//! The agent's Prometheus-style metrics (`--metrics-listen`): builds made and reused,
//! clusters running, and the Fleet counters (heartbeats sent, tasks run and failed).

use blocklab_daemon::metrics::{Counter, Exposition};

/// PostgreSQL builds made (configure + make + install completed).
pub static BUILDS_MADE: Counter = Counter::new();
/// Builds found complete in the cache and reused.
pub static BUILDS_REUSED: Counter = Counter::new();
/// Clusters this agent runs now.
pub static CLUSTERS_RUNNING: Counter = Counter::new();

/// The exposition text.
pub fn render() -> String {
    Exposition::new()
        .counter(
            "blocklab_agent_builds_made_total",
            "PostgreSQL builds made.",
            BUILDS_MADE.get(),
        )
        .counter(
            "blocklab_agent_builds_reused_total",
            "Cached PostgreSQL builds reused.",
            BUILDS_REUSED.get(),
        )
        .gauge(
            "blocklab_agent_clusters_running",
            "PostgreSQL clusters running for runs.",
            CLUSTERS_RUNNING.get(),
        )
        .fleet_host("blocklab_agent")
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn scrape_agent_metrics() {
        BUILDS_REUSED.inc();
        let addr = blocklab_daemon::metrics::spawn("127.0.0.1:0", std::sync::Arc::new(render))
            .await
            .expect("listen");
        let (head, body) = blocklab_daemon::metrics::http_get(addr, "/metrics", &[])
            .await
            .expect("scrape");
        assert!(head.contains(" 200"), "{head}");
        for want in [
            "# TYPE blocklab_agent_builds_made_total counter",
            "# TYPE blocklab_agent_clusters_running gauge",
            "blocklab_agent_clusters_running ",
            "blocklab_agent_heartbeats_sent_total ",
            "blocklab_agent_tasks_run_total ",
            "blocklab_agent_tasks_failed_total ",
        ] {
            assert!(body.contains(want), "lacks {want:?}:\n{body}");
        }
        assert!(
            !body.contains("blocklab_agent_builds_reused_total 0\n"),
            "{body}"
        );
    }
}
