//! The standalone summary, line for line in pgbench 15's layout (so the two can be
//! diffed), followed by what pgbench does not print: percentiles and client CPU.

use std::fmt::Write as _;

use crate::engine::report::LoadReport;

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

impl LoadReport {
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let total = self.measured.transactions + self.measured.failures + self.measured.skipped;
        let w = &mut s;
        let _ = writeln!(w, "transaction type: {}", self.transaction_type);
        let _ = writeln!(w, "scaling factor: {}", self.scale);
        let _ = writeln!(w, "query mode: {}", self.protocol);
        let _ = writeln!(w, "number of clients: {}", self.measured.clients);
        let _ = writeln!(w, "number of threads: {}", self.threads);
        let _ = writeln!(w, "maximum number of tries: {}", self.max_tries);
        if self.transactions_per_client > 0 {
            let _ = writeln!(
                w,
                "number of transactions per client: {}",
                self.transactions_per_client
            );
            let _ = writeln!(
                w,
                "number of transactions actually processed: {}/{}",
                self.measured.transactions,
                self.transactions_per_client * u64::from(self.measured.clients)
            );
        } else {
            let _ = writeln!(w, "duration: {} s", self.duration_s);
            let _ = writeln!(
                w,
                "number of transactions actually processed: {}",
                self.measured.transactions
            );
        }
        let _ = writeln!(
            w,
            "number of failed transactions: {} ({:.3}%)",
            self.measured.failures,
            pct(self.measured.failures, total)
        );
        if self.failures_detailed {
            let _ = writeln!(
                w,
                "number of serialization failures: {} ({:.3}%)",
                self.serialization_failures,
                pct(self.serialization_failures, total)
            );
            let _ = writeln!(
                w,
                "number of deadlock failures: {} ({:.3}%)",
                self.deadlock_failures,
                pct(self.deadlock_failures, total)
            );
            if self.other_failures > 0 {
                let _ = writeln!(
                    w,
                    "number of other failures: {} ({:.3}%)",
                    self.other_failures,
                    pct(self.other_failures, total)
                );
            }
        }
        if self.max_tries != 1 {
            let _ = writeln!(
                w,
                "number of transactions retried: {} ({:.3}%)",
                self.retried,
                pct(self.retried, total)
            );
            let _ = writeln!(w, "total number of retries: {}", self.measured.retries);
        }
        // pgbench stops here when nothing ran.
        if self.measured.transactions + self.measured.skipped == 0 {
            return s;
        }
        if self.rate > 0.0 && self.latency_limit_ms.is_some() {
            let _ = writeln!(
                w,
                "number of transactions skipped: {} ({:.3}%)",
                self.measured.skipped,
                pct(self.measured.skipped, total)
            );
        }
        if let Some(l) = self.latency_limit_ms {
            let _ = writeln!(
                w,
                "number of transactions above the {l:.1} ms latency limit: {}/{} ({:.3}%)",
                self.measured.late,
                self.measured.transactions,
                pct(self.measured.late, self.measured.transactions)
            );
        }
        if self.latency_measured {
            let _ = writeln!(
                w,
                "latency average = {:.3} ms",
                self.measured.latency_avg_ms
            );
            let _ = writeln!(
                w,
                "latency stddev = {:.3} ms",
                self.measured.latency_stddev_ms
            );
        } else {
            let _ = writeln!(
                w,
                "latency average = {:.3} ms{}",
                self.summary_latency_avg_ms,
                if self.measured.failures > 0 {
                    " (including failures)"
                } else {
                    ""
                }
            );
        }
        if self.rate > 0.0 {
            let _ = writeln!(
                w,
                "rate limit schedule lag: avg {:.3} (max {:.3}) ms",
                self.measured.schedule_lag_avg_ms, self.measured.schedule_lag_max_ms
            );
        }
        if self.reconnect {
            let _ = writeln!(
                w,
                "average connection time = {:.3} ms",
                self.connection_time_avg_ms
            );
            let _ = writeln!(
                w,
                "tps = {:.6} (including reconnection times)",
                self.measured.tps_excluding_connections
            );
        } else {
            let _ = writeln!(
                w,
                "initial connection time = {:.3} ms",
                self.measured.connection_time_ms
            );
            let _ = writeln!(
                w,
                "tps = {:.6} (without initial connection time)",
                self.measured.tps_excluding_connections
            );
        }
        let multi = self.scripts.len() > 1;
        let weights: u64 = self.scripts.iter().map(|x| u64::from(x.weight)).sum();
        for (i, sc) in self.scripts.iter().enumerate() {
            if multi {
                let n = sc.transactions + sc.failures;
                let _ = writeln!(w, "SQL script {}: {}", i + 1, sc.description);
                let _ = writeln!(
                    w,
                    " - weight: {} (targets {:.1}% of total)",
                    sc.weight,
                    pct(u64::from(sc.weight), weights)
                );
                let _ = writeln!(
                    w,
                    " - {} transactions ({:.1}% of total, tps = {:.6})",
                    sc.transactions,
                    pct(sc.transactions, self.measured.transactions),
                    if self.measured.measured_seconds > 0.0 {
                        sc.transactions as f64 / self.measured.measured_seconds
                    } else {
                        0.0
                    }
                );
                let _ = writeln!(
                    w,
                    " - number of failed transactions: {} ({:.3}%)",
                    sc.failures,
                    pct(sc.failures, n)
                );
                let _ = writeln!(w, " - latency average = {:.3} ms", sc.latency_avg_ms);
            }
            if !sc.statements.is_empty() {
                let _ = writeln!(
                    w,
                    "{}statement latencies in milliseconds{}:",
                    if multi { " - " } else { "" },
                    if self.max_tries == 1 {
                        " and failures"
                    } else {
                        ", failures and retries"
                    }
                );
                for (text, ms, fails, retries) in &sc.statements {
                    if self.max_tries == 1 {
                        let _ = writeln!(w, "   {ms:>11.3}  {fails:>10}  {text}");
                    } else {
                        let _ = writeln!(w, "   {ms:>11.3}  {fails:>10}  {retries:>10}  {text}");
                    }
                }
            }
        }
        let _ = writeln!(
            w,
            "latency percentiles: p50 = {:.3} ms, p90 = {:.3} ms, p99 = {:.3} ms, p99.9 = {:.3} ms, max = {:.3} ms",
            self.measured.latency_p50_ms,
            self.measured.latency_p90_ms,
            self.measured.latency_p99_ms,
            self.measured.latency_p999_ms,
            self.measured.latency_max_ms
        );
        let _ = writeln!(
            w,
            "client cpu: user {:.3} s, system {:.3} s",
            self.measured.client_cpu_user_s, self.measured.client_cpu_system_s
        );
        s
    }
}
