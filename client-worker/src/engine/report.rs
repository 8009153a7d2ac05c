//! What a load run reports: the measured result, per script, and the standalone report's
//! extras.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::cpu::CpuTimes;
use crate::engine::options::LoadOptions;
use crate::engine::plan::Plan;
use crate::engine::stats::ClientStats;
use crate::engine::window::{self, WindowFacts};
use blocklab_measure::{LoadResult, Statement};

/// Measured facts other than the transactions themselves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timings {
    pub scale: u32,
    pub threads: u32,
    pub measured: Duration,
    /// Wall time from the start until every client was connected.
    pub connection_elapsed: Duration,
    /// Sum over clients of each one's connection time.
    pub connection_total: Duration,
    pub cpu: CpuTimes,
    pub random_seed: u64,
}

/// One script's share of the run.
#[derive(Clone, Debug, Serialize)]
pub struct ScriptReport {
    pub description: String,
    pub weight: u32,
    pub transactions: u64,
    pub failures: u64,
    pub latency_avg_ms: f64,
    /// Per command: (text, average latency ms, failures, retries), with `-r`.
    pub statements: Vec<(String, f64, u64, u64)>,
    /// Per command: how many times it ran (with `-r`), to merge across workers.
    pub statement_counts: Vec<u64>,
}

/// The outcome of a load run.
#[derive(Clone, Debug)]
pub struct LoadReport {
    pub transaction_type: String,
    pub scripts: Vec<ScriptReport>,
    pub protocol: String,
    pub scale: u32,
    pub threads: u32,
    pub duration_s: f64,
    pub transactions_per_client: u64,
    pub warmup_s: f64,
    pub max_tries: u32,
    pub retried: u64,
    pub aborted_clients: u64,
    pub serialization_failures: u64,
    pub deadlock_failures: u64,
    /// Other SQL errors (only with `continue_on_error`).
    pub other_failures: u64,
    pub failures_detailed: bool,
    /// `-C`: a connection per transaction.
    pub reconnect: bool,
    /// `-P`/`-R`/`-L`: pgbench prints the measured latency average and stddev.
    pub latency_measured: bool,
    /// The "latency average" pgbench prints: the measured mean with `-R`, `-L` or `-P`,
    /// else the run time times the clients over the transactions (failed and skipped
    /// ones included), as PostgreSQL 15's pgbench computes it.
    pub summary_latency_avg_ms: f64,
    /// `-C`: connecting and disconnecting time per transaction (failed ones included).
    pub connection_time_avg_ms: f64,
    pub rate: f64,
    pub latency_limit_ms: Option<f64>,
    /// Average time one client took to connect.
    pub connection_time_per_client_ms: f64,
    pub first_error: Option<String>,
    /// What the run measured, as the coordinator merges it (the serialized histogram and,
    /// with `-r`, the statements of each script included).
    pub measured: LoadResult,
    /// Latency of successful transactions, microseconds.
    pub histogram: Histogram<u64>,
}

impl LoadReport {
    pub(crate) fn build(
        opts: &LoadOptions,
        plan: &Plan,
        t: &Timings,
        total: &ClientStats,
    ) -> LoadReport {
        let measured_s = t.measured.as_secs_f64();
        let avg = total.latency_avg_stddev_ms().0;
        let scripts: Vec<ScriptReport> = plan
            .scripts
            .scripts
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (n, f, sum) = total.per_script.get(i).copied().unwrap_or((0, 0, 0.0));
                let statements = total
                    .steps
                    .get(i)
                    .map(|st| {
                        st.iter()
                            .zip(&s.script.steps)
                            .map(|(x, step)| {
                                let ms = if x.count == 0 {
                                    0.0
                                } else {
                                    x.sum_us / x.count as f64 / 1e3
                                };
                                (step.text.clone(), ms, x.failures, x.retries)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let statement_counts = total
                    .steps
                    .get(i)
                    .map(|st| st.iter().map(|x| x.count).collect())
                    .unwrap_or_default();
                ScriptReport {
                    statement_counts,
                    description: s.description.clone(),
                    weight: s.weight,
                    transactions: n,
                    failures: f,
                    latency_avg_ms: if n == 0 { 0.0 } else { sum / n as f64 / 1e3 },
                    statements,
                }
            })
            .collect();
        let lag_n = total.transactions;
        let total_cnt = total.transactions + total.skipped + total.failures;
        let latency_measured =
            opts.rate > 0.0 || opts.latency_limit.is_some() || opts.progress_interval.is_some();
        let summary_latency_avg_ms = if latency_measured {
            avg
        } else if total_cnt == 0 {
            0.0
        } else {
            measured_s * 1e3 * f64::from(opts.clients) / total_cnt as f64
        };
        let per_txn = total.transactions + total.failures;
        let facts = WindowFacts {
            measured_s,
            connection_elapsed: t.connection_elapsed,
            connection_total: t.connection_total,
            cpu: t.cpu,
            clients: opts.clients,
            random_seed: t.random_seed,
        };
        let window = window::summary(total, &facts);
        let measured = LoadResult {
            retries: total.retries,
            skipped: total.skipped,
            late: total.late,
            schedule_lag_avg_ms: if lag_n == 0 {
                0.0
            } else {
                total.lag_sum_us / lag_n as f64 / 1e3
            },
            schedule_lag_max_ms: total.lag_max_us / 1e3,
            // Under -C the window holds every connection already.
            tps_including_connections: if opts.reconnect {
                window.tps_excluding_connections
            } else {
                window.tps_including_connections
            },
            statements: statements(&scripts),
            ..window
        };
        LoadReport {
            transaction_type: if scripts.len() == 1 {
                scripts[0].description.clone()
            } else {
                "multiple scripts".into()
            },
            scripts,
            protocol: opts.protocol.name().into(),
            scale: t.scale,
            threads: t.threads,
            duration_s: opts.duration.as_secs_f64(),
            transactions_per_client: opts.transactions_per_client,
            warmup_s: opts.warmup.as_secs_f64(),
            max_tries: opts.max_tries,
            retried: total.retried,
            aborted_clients: total.aborted,
            serialization_failures: total.serialization_failures,
            deadlock_failures: total.deadlock_failures,
            other_failures: total.other_failures,
            failures_detailed: opts.failures_detailed,
            reconnect: opts.reconnect,
            latency_measured,
            summary_latency_avg_ms,
            connection_time_avg_ms: if per_txn == 0 {
                0.0
            } else {
                total.conn_us / 1e3 / per_txn as f64
            },
            rate: opts.rate,
            latency_limit_ms: opts.latency_limit.map(|l| l.as_secs_f64() * 1e3),
            connection_time_per_client_ms: t.connection_total.as_secs_f64() * 1e3
                / f64::from(opts.clients.max(1)),
            first_error: total.first_error.clone(),
            measured,
            histogram: total.histogram.clone(),
        }
    }
}

/// Per statement of each script (with `-r`): count, summed latency, failures.
fn statements(scripts: &[ScriptReport]) -> Vec<Statement> {
    let mut out = Vec::new();
    for (i, s) in scripts.iter().enumerate() {
        for (pos, st) in s.statements.iter().enumerate() {
            let count = s.statement_counts.get(pos).copied().unwrap_or(0);
            out.push(Statement {
                script_index: u32::try_from(i).unwrap_or(u32::MAX),
                script: s.description.clone(),
                position: u32::try_from(pos).unwrap_or(u32::MAX),
                command: st.0.clone(),
                count,
                latency_sum_ms: st.1 * count as f64,
                failures: st.2,
            });
        }
    }
    out
}

/// The `--json` form: the report's own fields and the measured ones in one object, in the
/// order the standalone command always printed them (no histogram, statements or metrics).
impl Serialize for LoadReport {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let m = &self.measured;
        let mut s = ser.serialize_struct("LoadReport", 46)?;
        s.serialize_field("transaction_type", &self.transaction_type)?;
        s.serialize_field("scripts", &self.scripts)?;
        s.serialize_field("protocol", &self.protocol)?;
        s.serialize_field("scale", &self.scale)?;
        s.serialize_field("clients", &m.clients)?;
        s.serialize_field("threads", &self.threads)?;
        s.serialize_field("duration_s", &self.duration_s)?;
        s.serialize_field("transactions_per_client", &self.transactions_per_client)?;
        s.serialize_field("warmup_s", &self.warmup_s)?;
        s.serialize_field("max_tries", &self.max_tries)?;
        s.serialize_field("transactions", &m.transactions)?;
        s.serialize_field("failures", &m.failures)?;
        s.serialize_field("retries", &m.retries)?;
        s.serialize_field("retried", &self.retried)?;
        s.serialize_field("skipped", &m.skipped)?;
        s.serialize_field("late", &m.late)?;
        s.serialize_field("aborted_clients", &self.aborted_clients)?;
        s.serialize_field("serialization_failures", &self.serialization_failures)?;
        s.serialize_field("deadlock_failures", &self.deadlock_failures)?;
        s.serialize_field("other_failures", &self.other_failures)?;
        s.serialize_field("failures_detailed", &self.failures_detailed)?;
        s.serialize_field("reconnect", &self.reconnect)?;
        s.serialize_field("latency_measured", &self.latency_measured)?;
        s.serialize_field("summary_latency_avg_ms", &self.summary_latency_avg_ms)?;
        s.serialize_field("connection_time_avg_ms", &self.connection_time_avg_ms)?;
        s.serialize_field("rate", &self.rate)?;
        s.serialize_field("latency_limit_ms", &self.latency_limit_ms)?;
        s.serialize_field("schedule_lag_avg_ms", &m.schedule_lag_avg_ms)?;
        s.serialize_field("schedule_lag_max_ms", &m.schedule_lag_max_ms)?;
        s.serialize_field("tps_including_connections", &m.tps_including_connections)?;
        s.serialize_field("tps_excluding_connections", &m.tps_excluding_connections)?;
        s.serialize_field("latency_avg_ms", &m.latency_avg_ms)?;
        s.serialize_field("latency_stddev_ms", &m.latency_stddev_ms)?;
        s.serialize_field("latency_p50_ms", &m.latency_p50_ms)?;
        s.serialize_field("latency_p90_ms", &m.latency_p90_ms)?;
        s.serialize_field("latency_p99_ms", &m.latency_p99_ms)?;
        s.serialize_field("latency_p999_ms", &m.latency_p999_ms)?;
        s.serialize_field("latency_max_ms", &m.latency_max_ms)?;
        s.serialize_field("connection_time_ms", &m.connection_time_ms)?;
        s.serialize_field(
            "connection_time_per_client_ms",
            &self.connection_time_per_client_ms,
        )?;
        s.serialize_field("measured_seconds", &m.measured_seconds)?;
        s.serialize_field("client_cpu_user_s", &m.client_cpu_user_s)?;
        s.serialize_field("client_cpu_system_s", &m.client_cpu_system_s)?;
        s.serialize_field("random_seed", &m.random_seed)?;
        s.serialize_field("first_error", &self.first_error)?;
        s.serialize_field("samples", &m.samples)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::Sample;

    #[test]
    fn json_keeps_the_keys_of_the_standalone_report_in_order() {
        let r = LoadReport {
            transaction_type: "tpcb-like".into(),
            scripts: Vec::new(),
            protocol: "simple".into(),
            scale: 1,
            threads: 1,
            duration_s: 1.0,
            transactions_per_client: 0,
            warmup_s: 0.0,
            max_tries: 1,
            retried: 0,
            aborted_clients: 0,
            serialization_failures: 0,
            deadlock_failures: 0,
            other_failures: 0,
            failures_detailed: false,
            reconnect: false,
            latency_measured: false,
            summary_latency_avg_ms: 0.0,
            connection_time_avg_ms: 0.0,
            rate: 0.0,
            latency_limit_ms: None,
            connection_time_per_client_ms: 0.0,
            first_error: None,
            measured: LoadResult {
                transactions: 7,
                clients: 2,
                samples: vec![Sample::default()],
                latency_histogram: vec![1, 2, 3],
                ..LoadResult::default()
            },
            histogram: crate::engine::stats::new_histogram(),
        };
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!(v["transactions"], 7);
        assert_eq!(v["clients"], 2);
        assert!(v.get("latency_histogram").is_none());
        let text = serde_json::to_string(&r).expect("json");
        // The report's own keys and the measured ones interleave as they always did.
        let at = |k: &str| text.find(&format!("\"{k}\":")).expect(k);
        let order = [
            "transaction_type",
            "clients",
            "threads",
            "transactions",
            "retried",
            "skipped",
            "aborted_clients",
            "latency_limit_ms",
            "schedule_lag_avg_ms",
            "connection_time_ms",
            "connection_time_per_client_ms",
            "measured_seconds",
            "random_seed",
            "first_error",
            "samples",
        ];
        assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
        assert_eq!(text.matches("\":").count(), 46 + 4, "{text}");
        assert!(
            text.starts_with("{\"transaction_type\":\"tpcb-like\",\"scripts\":[],\"protocol\"")
        );
        assert!(text.ends_with(
            "\"first_error\":null,\"samples\":[{\"second\":0,\"transactions\":0,\"latency_avg_ms\":0.0,\"failures\":0}]}"
        ));
    }
}
