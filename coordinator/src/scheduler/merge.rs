//! Merging the results of a run's workers into one: transactions and per-second series are
//! summed, latency percentiles come from the merged HDR histograms.

use std::collections::BTreeMap;

use blocklab_measure::{LoadResult, Sample, Statement, TxnType};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("worker {worker} sent a latency histogram that cannot be read: {reason}")]
    Histogram { worker: usize, reason: String },
    #[error("no worker results to merge")]
    Empty,
}

/// Merges worker results of one run (the workers measured the same window).
pub fn merge(parts: &[LoadResult]) -> Result<LoadResult, MergeError> {
    let Some(first) = parts.first() else {
        return Err(MergeError::Empty);
    };
    if parts.len() == 1 {
        return Ok(LoadResult {
            metrics: Vec::new(),
            ..first.clone()
        });
    }
    let mut hist: Option<Histogram<u64>> = None;
    for (i, p) in parts.iter().enumerate() {
        let h = read_histogram(i, &p.latency_histogram)?.ok_or(MergeError::Histogram {
            worker: i,
            reason: "none sent".into(),
        })?;
        match hist.as_mut() {
            None => hist = Some(resizing(h)),
            Some(acc) => acc.add(&h).map_err(|e| MergeError::Histogram {
                worker: i,
                reason: format!("{e:?}"),
            })?,
        }
    }
    let hist = hist.ok_or(MergeError::Empty)?;
    let txns: u64 = parts.iter().map(|p| p.transactions).sum();
    let n = txns as f64;
    let weighted = |f: fn(&LoadResult) -> f64| {
        if txns == 0 {
            0.0
        } else {
            parts
                .iter()
                .map(|p| f(p) * p.transactions as f64)
                .sum::<f64>()
                / n
        }
    };
    let avg = weighted(|p| p.latency_avg_ms);
    // Pooled variance from each part's mean and variance.
    let second_moment = weighted(|p| p.latency_stddev_ms.powi(2) + p.latency_avg_ms.powi(2));
    let stddev = (second_moment - avg * avg).max(0.0).sqrt();
    let measured = parts.iter().map(|p| p.measured_seconds).fold(0.0, f64::max);
    let pct = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let mut samples: BTreeMap<u32, (u64, f64, u64)> = BTreeMap::new();
    for p in parts {
        for s in &p.samples {
            let e = samples.entry(s.second).or_default();
            e.0 += s.transactions;
            e.1 += s.latency_avg_ms * s.transactions as f64;
            e.2 += s.failures;
        }
    }
    let mut bytes = Vec::new();
    let _ = V2DeflateSerializer::new().serialize(&hist, &mut bytes);
    let conn_incl: f64 = parts.iter().map(|p| p.tps_including_connections).sum();
    Ok(LoadResult {
        transactions: txns,
        failures: parts.iter().map(|p| p.failures).sum(),
        tps_excluding_connections: if measured > 0.0 { n / measured } else { 0.0 },
        tps_including_connections: conn_incl,
        latency_avg_ms: avg,
        latency_stddev_ms: stddev,
        latency_p50_ms: pct(0.50),
        latency_p90_ms: pct(0.90),
        latency_p99_ms: pct(0.99),
        latency_p999_ms: pct(0.999),
        latency_max_ms: hist.max() as f64 / 1000.0,
        connection_time_ms: parts
            .iter()
            .map(|p| p.connection_time_ms)
            .fold(0.0, f64::max),
        measured_seconds: measured,
        client_cpu_user_s: parts.iter().map(|p| p.client_cpu_user_s).sum(),
        client_cpu_system_s: parts.iter().map(|p| p.client_cpu_system_s).sum(),
        samples: samples
            .into_iter()
            .map(|(second, (t, lat, f))| Sample {
                second,
                transactions: t,
                latency_avg_ms: if t == 0 { 0.0 } else { lat / t as f64 },
                failures: f,
            })
            .collect(),
        latency_histogram: bytes,
        retries: parts.iter().map(|p| p.retries).sum(),
        skipped: parts.iter().map(|p| p.skipped).sum(),
        late: parts.iter().map(|p| p.late).sum(),
        schedule_lag_avg_ms: weighted(|p| p.schedule_lag_avg_ms),
        schedule_lag_max_ms: parts
            .iter()
            .map(|p| p.schedule_lag_max_ms)
            .fold(0.0, f64::max),
        statements: merge_statements(parts),
        random_seed: first.random_seed,
        clients: parts.iter().map(|p| p.clients).sum(),
        // The run's metrics come from the merge (the scheduler's), not the workers' own.
        metrics: Vec::new(),
        txn_types: merge_txn_types(parts)?,
    })
}

/// Per statement over the workers: counts, latency sums and failures added, in the first
/// worker's order (every worker runs the same scripts).
fn merge_statements(parts: &[LoadResult]) -> Vec<Statement> {
    let mut out: Vec<Statement> = Vec::new();
    for p in parts {
        for s in &p.statements {
            match out
                .iter_mut()
                .find(|o| o.script_index == s.script_index && o.position == s.position)
            {
                Some(o) => {
                    o.count += s.count;
                    o.latency_sum_ms += s.latency_sum_ms;
                    o.failures += s.failures;
                }
                None => out.push(s.clone()),
            }
        }
    }
    out
}

/// Per transaction type over the workers: counts summed, histograms merged; types in the
/// order the first worker that has them lists them.
fn merge_txn_types(parts: &[LoadResult]) -> Result<Vec<TxnType>, MergeError> {
    let mut out: Vec<(TxnType, Option<Histogram<u64>>)> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        for t in &p.txn_types {
            let h = read_histogram(i, &t.latency_histogram)?;
            match out.iter_mut().find(|(o, _)| o.name == t.name) {
                Some((o, acc)) => {
                    o.count += t.count;
                    o.rollbacks += t.rollbacks;
                    o.failures += t.failures;
                    o.rows += t.rows;
                    match (acc.as_mut(), h) {
                        (Some(acc), Some(h)) => acc.add(&h).map_err(|e| MergeError::Histogram {
                            worker: i,
                            reason: format!("{e:?}"),
                        })?,
                        (None, h) => *acc = h.map(resizing),
                        (Some(_), None) => {}
                    }
                }
                None => out.push((t.clone(), h.map(resizing))),
            }
        }
    }
    Ok(out
        .into_iter()
        .map(|(mut t, h)| {
            if let Some(h) = h {
                let mut bytes = Vec::new();
                let _ = V2DeflateSerializer::new().serialize(&h, &mut bytes);
                t.latency_histogram = bytes;
            }
            t
        })
        .collect())
}

/// An accumulator that grows to hold what other workers' histograms recorded (their
/// ranges can differ).
fn resizing(mut h: Histogram<u64>) -> Histogram<u64> {
    h.auto(true);
    h
}

/// A worker's serialized histogram, checked before it is read; empty bytes = none.
pub fn read_histogram(worker: usize, bytes: &[u8]) -> Result<Option<Histogram<u64>>, MergeError> {
    super::histogram::read(bytes).map_err(|reason| MergeError::Histogram { worker, reason })
}

/// Splits `clients` across `workers` as evenly as possible: (clients, first client id) each.
pub fn split_clients(clients: u32, workers: u32) -> Vec<(u32, u32)> {
    let workers = workers.max(1);
    let (base, extra) = (clients / workers, clients % workers);
    let mut offset = 0;
    (0..workers)
        .map(|i| {
            let n = base + u32::from(i < extra);
            let share = (n, offset);
            offset += n;
            share
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(latencies_us: &[u64], seconds: f64) -> LoadResult {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).expect("histogram");
        for &l in latencies_us {
            h.record(l).expect("record");
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .expect("serialize");
        let n = latencies_us.len() as f64;
        let mean = latencies_us.iter().sum::<u64>() as f64 / n / 1000.0;
        let var = latencies_us
            .iter()
            .map(|&l| (l as f64 / 1000.0 - mean).powi(2))
            .sum::<f64>()
            / n;
        LoadResult {
            transactions: latencies_us.len() as u64,
            measured_seconds: seconds,
            latency_avg_ms: mean,
            latency_stddev_ms: var.sqrt(),
            latency_histogram: bytes,
            samples: vec![Sample {
                second: 0,
                transactions: latencies_us.len() as u64,
                latency_avg_ms: mean,
                failures: 0,
            }],
            clients: 1,
            ..Default::default()
        }
    }

    #[test]
    fn merged_percentiles_come_from_the_merged_histogram() {
        // Worker A is fast (1 ms), worker B slow (100 ms): the merged p50 is A's, p99 is B's,
        // which no average of the two parts' percentiles would give.
        let a = part(&[1000; 90], 1.0);
        let b = part(&[100_000; 10], 1.0);
        let m = merge(&[a, b]).expect("merge");
        assert_eq!(m.transactions, 100);
        assert_eq!(m.clients, 2);
        assert!(
            (m.latency_p50_ms - 1.0).abs() < 0.01,
            "{}",
            m.latency_p50_ms
        );
        assert!(
            (m.latency_p99_ms - 100.0).abs() < 0.1,
            "{}",
            m.latency_p99_ms
        );
        assert!(
            (m.latency_avg_ms - 10.9).abs() < 1e-9,
            "{}",
            m.latency_avg_ms
        );
        // Population stddev of 90 x 1 and 10 x 100: sqrt(0.9*1 + 0.1*10000 - 10.9^2) = 29.7
        assert!(
            (m.latency_stddev_ms - 29.7).abs() < 1e-9,
            "{}",
            m.latency_stddev_ms
        );
        assert!((m.tps_excluding_connections - 100.0).abs() < 1e-9);
        assert_eq!(m.samples.len(), 1);
        assert_eq!(m.samples[0].transactions, 100);
    }

    fn bounded(values_us: &[u64], high: u64) -> Vec<u8> {
        let mut h = Histogram::<u64>::new_with_bounds(1, high, 3).expect("histogram");
        for v in values_us {
            h.record(*v).expect("record");
        }
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .expect("serialize");
        bytes
    }

    #[test]
    fn histograms_of_different_ranges_and_transaction_types_merge() {
        // The first worker's histogram tops out at 10 ms, the second recorded 5 s.
        let mut a = part(&[1000; 4], 1.0);
        a.latency_histogram = bounded(&[1000; 4], 10_000);
        a.txn_types = vec![TxnType {
            name: "new_order".into(),
            count: 4,
            rollbacks: 1,
            latency_histogram: bounded(&[1000; 4], 10_000),
            ..Default::default()
        }];
        let mut b = part(&[5_000_000; 2], 1.0);
        b.latency_histogram = bounded(&[5_000_000; 2], 60_000_000);
        b.txn_types = vec![
            TxnType {
                name: "payment".into(),
                count: 2,
                ..Default::default()
            },
            TxnType {
                name: "new_order".into(),
                count: 2,
                rollbacks: 0,
                latency_histogram: bounded(&[5_000_000; 2], 60_000_000),
                ..Default::default()
            },
        ];
        let m = merge(&[a, b]).expect("merge");
        assert!(
            (m.latency_max_ms - 5000.0).abs() < 5.0,
            "{}",
            m.latency_max_ms
        );
        let names: Vec<&str> = m.txn_types.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["new_order", "payment"]);
        let no = &m.txn_types[0];
        assert_eq!((no.count, no.rollbacks), (6, 1));
        let h = read_histogram(0, &no.latency_histogram)
            .expect("read")
            .expect("histogram");
        assert_eq!(h.len(), 6);
        assert!(h.max() >= 4_990_000, "{}", h.max());
    }

    #[test]
    fn clients_split_evenly_with_global_ids() {
        assert_eq!(split_clients(5, 2), vec![(3, 0), (2, 3)]);
        assert_eq!(split_clients(4, 1), vec![(4, 0)]);
        assert_eq!(split_clients(6, 3), vec![(2, 0), (2, 2), (2, 4)]);
    }

    #[test]
    fn statements_add_up_over_workers() {
        let st = |count: u64, sum: f64| Statement {
            script_index: 0,
            script: "mine.sql".into(),
            position: 1,
            command: "INSERT".into(),
            count,
            latency_sum_ms: sum,
            failures: 1,
        };
        let mut a = part(&[1000], 1.0);
        a.statements = vec![st(10, 20.0)];
        a.schedule_lag_max_ms = 3.0;
        let mut b = part(&[2000], 1.0);
        b.statements = vec![st(30, 120.0)];
        b.schedule_lag_max_ms = 7.0;
        let m = merge(&[a, b]).expect("merge");
        assert_eq!(m.statements.len(), 1);
        assert_eq!((m.statements[0].count, m.statements[0].failures), (40, 2));
        assert!((m.statements[0].latency_avg_ms() - 3.5).abs() < 1e-12);
        assert_eq!(m.schedule_lag_max_ms, 7.0);
    }
}
