//! Measurements of a load thread's clients (one set per thread: a histogram and a
//! per-second series, whatever the number of clients), their merge, and the arithmetic of
//! the final report.

use std::time::Duration;

use blocklab_measure::Sample;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

pub use crate::engine::exec::FailureKind;

/// Transactions, latency and failures observed in one second of the measured window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SecondAcc {
    pub transactions: u64,
    pub latency_sum_us: f64,
    pub failures: u64,
}

/// One per-second series shared by the sessions of a workload driver (TPC-C-like
/// terminals, AS3AP-like users), so the window's series exists once per worker, not once
/// per session.
#[derive(Debug, Default)]
pub struct SharedSeries(std::sync::Mutex<Vec<SecondAcc>>);

impl SharedSeries {
    pub fn new(window_seconds: usize) -> SharedSeries {
        SharedSeries(std::sync::Mutex::new(vec![
            SecondAcc::default();
            window_seconds.max(1)
        ]))
    }

    /// Counts a transaction ending in `second` of the window (the last second takes what
    /// ends later): its latency, or a failure.
    pub fn record(&self, second: usize, latency: Option<Duration>) {
        let mut seconds = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let last = seconds.len().saturating_sub(1);
        if let Some(b) = seconds.get_mut(second.min(last)) {
            match latency {
                Some(l) => {
                    b.transactions += 1;
                    b.latency_sum_us += l.as_micros() as f64;
                }
                None => b.failures += 1,
            }
        }
    }

    /// The series so far.
    pub fn snapshot(&self) -> Vec<SecondAcc> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What one client (or, merged, a thread or the whole run) measured.
#[derive(Clone, Debug)]
pub struct ClientStats {
    /// Latency of successful transactions, microseconds.
    pub histogram: Histogram<u64>,
    pub transactions: u64,
    pub failures: u64,
    pub sum_us: f64,
    pub sumsq_us: f64,
    pub seconds: Vec<SecondAcc>,
    pub first_error: Option<String>,
    /// Extend `seconds` past the window instead of folding into its last second
    /// (runs bounded by a transaction count).
    pub grow: bool,
    /// Retries of serialization/deadlock failures, and transactions retried at least once.
    pub retries: u64,
    pub retried: u64,
    /// Rate-limited transactions skipped because they were already too late (-L).
    pub skipped: u64,
    /// Transactions slower than the latency limit.
    pub late: u64,
    /// Schedule lag (start - scheduled start) sum and maximum, with a rate limit.
    pub lag_sum_us: f64,
    pub lag_max_us: f64,
    /// Clients that stopped on a script error.
    pub aborted: u64,
    /// Failures by kind (they sum to `failures`).
    pub serialization_failures: u64,
    pub deadlock_failures: u64,
    pub other_failures: u64,
    /// Time spent connecting and disconnecting under `-C`, microseconds.
    pub conn_us: f64,
    /// Per script: transactions, failures, latency sum (µs).
    pub per_script: Vec<(u64, u64, f64)>,
    /// Per script, per step (-r).
    pub steps: Vec<Vec<crate::engine::exec::StepStat>>,
}

impl ClientStats {
    pub fn new(window_seconds: usize) -> Self {
        ClientStats {
            histogram: new_histogram(),
            transactions: 0,
            failures: 0,
            sum_us: 0.0,
            sumsq_us: 0.0,
            seconds: vec![SecondAcc::default(); window_seconds.max(1)],
            first_error: None,
            grow: false,
            retries: 0,
            retried: 0,
            skipped: 0,
            late: 0,
            lag_sum_us: 0.0,
            lag_max_us: 0.0,
            aborted: 0,
            serialization_failures: 0,
            deadlock_failures: 0,
            other_failures: 0,
            conn_us: 0.0,
            per_script: Vec::new(),
            steps: Vec::new(),
        }
    }

    fn bucket(&mut self, second: usize) -> &mut SecondAcc {
        const MAX_SECONDS: usize = 7 * 86_400;
        if self.grow && second >= self.seconds.len() && second < MAX_SECONDS {
            self.seconds.resize(second + 1, SecondAcc::default());
        }
        let last = self.seconds.len() - 1;
        &mut self.seconds[second.min(last)]
    }

    /// Counts a transaction of script `script` (successful or failed) for the summary.
    pub fn record_script(&mut self, script: usize, latency: Option<Duration>) {
        if self.per_script.len() <= script {
            self.per_script.resize(script + 1, (0, 0, 0.0));
        }
        let e = &mut self.per_script[script];
        match latency {
            Some(l) => {
                e.0 += 1;
                e.2 += l.as_secs_f64() * 1e6;
            }
            None => e.1 += 1,
        }
    }

    pub fn record_lag(&mut self, lag: Duration) {
        let us = lag.as_secs_f64() * 1e6;
        self.lag_sum_us += us;
        self.lag_max_us = self.lag_max_us.max(us);
    }

    /// A successful transaction ending in `second` of the window.
    pub fn record(&mut self, second: usize, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        if self.histogram.record(us).is_err() {
            self.histogram.saturating_record(us);
        }
        self.transactions += 1;
        let f = us as f64;
        self.sum_us += f;
        self.sumsq_us += f * f;
        let b = self.bucket(second);
        b.transactions += 1;
        b.latency_sum_us += f;
    }

    /// A failed transaction of the other workload kinds (no kind kept).
    pub fn record_failure(&mut self, second: usize, error: impl FnOnce() -> String) {
        self.failures += 1;
        self.bucket(second).failures += 1;
        if self.first_error.is_none() {
            self.first_error = Some(error());
        }
    }

    /// A failed transaction of `kind` ending in `second` of the window.
    pub fn record_failure_of(
        &mut self,
        second: usize,
        kind: FailureKind,
        error: impl FnOnce() -> String,
    ) {
        self.failures += 1;
        match kind {
            FailureKind::Serialization => self.serialization_failures += 1,
            FailureKind::Deadlock => self.deadlock_failures += 1,
            FailureKind::Other => self.other_failures += 1,
        }
        self.bucket(second).failures += 1;
        if self.first_error.is_none() {
            self.first_error = Some(error());
        }
    }

    pub fn merge(&mut self, other: &ClientStats) {
        self.histogram
            .add(&other.histogram)
            .expect("auto-resizing histograms always merge");
        self.transactions += other.transactions;
        self.failures += other.failures;
        self.sum_us += other.sum_us;
        self.sumsq_us += other.sumsq_us;
        if self.seconds.len() < other.seconds.len() {
            self.seconds
                .resize(other.seconds.len(), SecondAcc::default());
        }
        for (a, b) in self.seconds.iter_mut().zip(&other.seconds) {
            a.transactions += b.transactions;
            a.latency_sum_us += b.latency_sum_us;
            a.failures += b.failures;
        }
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.retries += other.retries;
        self.retried += other.retried;
        self.skipped += other.skipped;
        self.late += other.late;
        self.lag_sum_us += other.lag_sum_us;
        self.lag_max_us = self.lag_max_us.max(other.lag_max_us);
        self.aborted += other.aborted;
        self.serialization_failures += other.serialization_failures;
        self.deadlock_failures += other.deadlock_failures;
        self.other_failures += other.other_failures;
        self.conn_us += other.conn_us;
        if self.per_script.len() < other.per_script.len() {
            self.per_script.resize(other.per_script.len(), (0, 0, 0.0));
        }
        for (a, b) in self.per_script.iter_mut().zip(&other.per_script) {
            a.0 += b.0;
            a.1 += b.1;
            a.2 += b.2;
        }
        self.merge_steps(&other.steps);
    }

    /// Adds per-statement measurements (-r) to these.
    pub fn merge_steps(&mut self, steps: &[Vec<crate::engine::exec::StepStat>]) {
        if self.steps.len() < steps.len() {
            self.steps.resize(steps.len(), Vec::new());
        }
        for (a, b) in self.steps.iter_mut().zip(steps) {
            if a.len() < b.len() {
                a.resize(b.len(), crate::engine::exec::StepStat::default());
            }
            for (x, y) in a.iter_mut().zip(b) {
                x.sum_us += y.sum_us;
                x.count += y.count;
                x.failures += y.failures;
                x.retries += y.retries;
            }
        }
    }

    /// Mean and standard deviation of latency in ms (pgbench: sqrt(E[x^2] - E[x]^2)).
    pub fn latency_avg_stddev_ms(&self) -> (f64, f64) {
        if self.transactions == 0 {
            return (0.0, 0.0);
        }
        let n = self.transactions as f64;
        let avg = self.sum_us / n;
        let var = (self.sumsq_us / n - avg * avg).max(0.0);
        (avg / 1000.0, var.sqrt() / 1000.0)
    }

    pub fn samples(&self) -> Vec<Sample> {
        self.seconds
            .iter()
            .enumerate()
            .map(|(i, s)| Sample {
                second: u32::try_from(i).unwrap_or(u32::MAX),
                transactions: s.transactions,
                latency_avg_ms: if s.transactions == 0 {
                    0.0
                } else {
                    s.latency_sum_us / s.transactions as f64 / 1000.0
                },
                failures: s.failures,
            })
            .collect()
    }
}

/// An auto-resizing histogram of microseconds with 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is valid")
}

/// The latency at quantile `q` (0..=1) in milliseconds; 0 for an empty histogram.
pub fn quantile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        h.value_at_quantile(q) as f64 / 1000.0
    }
}

/// Transactions per second of the measured window.
pub fn tps_excluding_connections(transactions: u64, measured_s: f64) -> f64 {
    if measured_s <= 0.0 {
        0.0
    } else {
        transactions as f64 / measured_s
    }
}

/// Transactions per second charging each client its average connection time, as pgbench
/// did before 14: `n / (measured + total connection time / clients)`.
pub fn tps_including_connections(
    transactions: u64,
    measured_s: f64,
    conn_total_s: f64,
    clients: u32,
) -> f64 {
    let spread = if clients == 0 {
        0.0
    } else {
        conn_total_s / f64::from(clients)
    };
    tps_excluding_connections(transactions, measured_s + spread)
}

/// V2 deflate serialization, the form `RunLoadResult.latency_histogram` carries.
pub fn serialize_histogram(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut out)
        .expect("serializing into memory");
    out
}

pub fn deserialize_histogram(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .map_err(|e| format!("invalid latency histogram: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tps_arithmetic() {
        assert_eq!(tps_excluding_connections(1000, 2.0), 500.0);
        assert_eq!(tps_excluding_connections(1000, 0.0), 0.0);
        // 4 clients took 2 s to connect in total: each is charged 0.5 s.
        assert_eq!(tps_including_connections(1000, 1.5, 2.0, 4), 500.0);
        assert!(
            tps_including_connections(1000, 2.0, 0.4, 4) < tps_excluding_connections(1000, 2.0)
        );
    }

    #[test]
    fn percentiles_avg_and_stddev() {
        let mut s = ClientStats::new(2);
        for us in 1..=1000u64 {
            s.record(0, Duration::from_micros(us * 10));
        }
        assert_eq!(s.transactions, 1000);
        let p50 = quantile_ms(&s.histogram, 0.5);
        let p99 = quantile_ms(&s.histogram, 0.99);
        assert!((p50 - 5.0).abs() < 0.01, "p50 {p50}");
        assert!((p99 - 9.9).abs() < 0.01, "p99 {p99}");
        let (avg, sd) = s.latency_avg_stddev_ms();
        assert!((avg - 5.005).abs() < 1e-9, "avg {avg}");
        // population stddev of 10..=10000 step 10 us is 2886.75 us
        assert!((sd - 2.88675).abs() < 1e-4, "stddev {sd}");
        assert_eq!(quantile_ms(&new_histogram(), 0.5), 0.0);
    }

    #[test]
    fn merge_and_round_trip() {
        let mut a = ClientStats::new(3);
        let mut b = ClientStats::new(3);
        a.record(0, Duration::from_micros(100));
        a.record(5, Duration::from_micros(300)); // past the window: folded into the last second
        b.record(1, Duration::from_micros(200));
        b.record_failure_of(1, FailureKind::Other, || "boom".into());
        b.record_failure_of(1, FailureKind::Deadlock, || "second".into());
        a.merge(&b);
        assert_eq!(a.transactions, 3);
        assert_eq!(a.failures, 2);
        assert_eq!((a.deadlock_failures, a.other_failures), (1, 1));
        assert_eq!(a.first_error.as_deref(), Some("boom"));
        assert_eq!(a.histogram.len(), 3);
        let samples = a.samples();
        assert_eq!(
            samples.iter().map(|s| s.transactions).collect::<Vec<_>>(),
            [1, 1, 1]
        );
        assert_eq!(samples[1].failures, 2);
        assert_eq!(samples[2].latency_avg_ms, 0.3);

        let bytes = serialize_histogram(&a.histogram);
        let back = deserialize_histogram(&bytes).unwrap();
        assert_eq!(back, a.histogram);
        assert_eq!(back.max(), a.histogram.max());
        assert!(deserialize_histogram(b"not a histogram").is_err());
    }
}
