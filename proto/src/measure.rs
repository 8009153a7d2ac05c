//! The measurements of a run (blocklab-measure) to and from their wire form: `RunLoadResult`
//! and its samples, transaction types, statements and metrics. The only place they convert.

use blocklab_measure::{LoadResult, Metric, Sample, Statement, TxnType};

use crate::all;
use crate::v1::{PerSecondSample, RunLoadResult, StatementStats, TxnTypeStats, WorkloadMetric};

both_ways!(
    Sample,
    PerSecondSample,
    [second, transactions, latency_avg_ms, failures],
    []
);
both_ways!(
    Metric,
    WorkloadMetric,
    [name, value, unit, higher_is_better],
    []
);
both_ways!(
    TxnType,
    TxnTypeStats,
    [name, count, rollbacks, failures, latency_histogram, rows],
    []
);
both_ways!(
    Statement,
    StatementStats,
    [
        script_index,
        script,
        position,
        command,
        count,
        latency_sum_ms,
        failures
    ],
    []
);
both_ways!(
    LoadResult,
    RunLoadResult,
    [
        transactions,
        failures,
        retries,
        skipped,
        late,
        tps_including_connections,
        tps_excluding_connections,
        latency_avg_ms,
        latency_stddev_ms,
        latency_p50_ms,
        latency_p90_ms,
        latency_p99_ms,
        latency_p999_ms,
        latency_max_ms,
        connection_time_ms,
        measured_seconds,
        client_cpu_user_s,
        client_cpu_system_s,
        schedule_lag_avg_ms,
        schedule_lag_max_ms,
        latency_histogram,
        random_seed,
        clients
    ],
    [samples, metrics, txn_types, statements]
);

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> LoadResult {
        LoadResult {
            transactions: 1,
            failures: 2,
            retries: 3,
            skipped: 4,
            late: 5,
            tps_including_connections: 6.0,
            tps_excluding_connections: 7.0,
            latency_avg_ms: 8.0,
            latency_stddev_ms: 9.0,
            latency_p50_ms: 10.0,
            latency_p90_ms: 11.0,
            latency_p99_ms: 12.0,
            latency_p999_ms: 13.0,
            latency_max_ms: 14.0,
            connection_time_ms: 15.0,
            measured_seconds: 16.0,
            client_cpu_user_s: 17.0,
            client_cpu_system_s: 18.0,
            schedule_lag_avg_ms: 19.0,
            schedule_lag_max_ms: 20.0,
            samples: vec![Sample {
                second: 21,
                transactions: 22,
                latency_avg_ms: 23.0,
                failures: 24,
            }],
            latency_histogram: vec![25, 26],
            random_seed: 27,
            clients: 28,
            metrics: vec![Metric {
                name: "notpm".into(),
                value: 29.0,
                unit: "NOTPM".into(),
                higher_is_better: true,
            }],
            txn_types: vec![TxnType {
                name: "new_order".into(),
                count: 30,
                rollbacks: 31,
                failures: 32,
                latency_histogram: vec![33],
                rows: 34,
            }],
            statements: vec![Statement {
                script_index: 35,
                script: "tpcb-like".into(),
                position: 36,
                command: "BEGIN;".into(),
                count: 37,
                latency_sum_ms: 38.0,
                failures: 39,
            }],
        }
    }

    #[test]
    fn load_result_round_trips_through_the_wire() {
        let r = full();
        let wire = RunLoadResult::from(r.clone());
        assert_eq!(wire.transactions, 1);
        assert_eq!(wire.schedule_lag_max_ms, 20.0);
        assert_eq!(wire.samples[0].failures, 24);
        assert_eq!(wire.metrics[0].unit, "NOTPM");
        assert_eq!(wire.txn_types[0].rows, 34);
        assert_eq!(wire.statements[0].latency_sum_ms, 38.0);
        assert_eq!(LoadResult::from(wire), r);
        let empty = RunLoadResult::default();
        assert_eq!(LoadResult::from(empty.clone()), LoadResult::default());
        assert_eq!(RunLoadResult::from(LoadResult::default()), empty);
    }
}
