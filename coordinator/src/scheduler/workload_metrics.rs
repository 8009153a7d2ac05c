//! The metrics a run of each workload kind stores beside the pgbench columns, derived from
//! the workers' merged results: NOTPM and per-transaction response times (TPC-C-like),
//! tuples per second (AS3AP-like mixes), seconds per maintenance step; and what a window's
//! WAL cost per transaction (pgbench scripts, TPC-C-like).

use blocklab_measure::{LoadResult, Metric};

use super::merge::read_histogram;

pub fn metric(name: &str, value: f64, unit: &str, higher_is_better: bool) -> Metric {
    Metric {
        name: name.to_string(),
        value: if value.is_finite() { value } else { 0.0 },
        unit: unit.to_string(),
        higher_is_better,
    }
}

/// Keeps the first metric of each name (the catalog keys metrics by run and name).
pub fn dedup(metrics: Vec<Metric>) -> Vec<Metric> {
    let mut out: Vec<Metric> = Vec::with_capacity(metrics.len());
    for m in metrics {
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m);
        }
    }
    out
}

/// Moves the metric named `headline` to the front (the run's headline is the first metric).
pub fn headline_first(mut metrics: Vec<Metric>, headline: &str) -> Vec<Metric> {
    if let Some(i) = metrics.iter().position(|m| m.name == headline) {
        let m = metrics.remove(i);
        metrics.insert(0, m);
    }
    metrics
}

/// NOTPM (New-Order transactions completed per minute of the window, rolled-back ones
/// included, as TPC-C counts them), then per transaction type: share of the mix, response
/// time average and percentiles, rollbacks and failures.
pub fn tpcc(r: &LoadResult) -> Vec<Metric> {
    let minutes = r.measured_seconds / 60.0;
    let per_min = |n: u64| {
        if minutes > 0.0 {
            n as f64 / minutes
        } else {
            0.0
        }
    };
    let new_orders = r
        .txn_types
        .iter()
        .find(|t| t.name == "new_order")
        .map_or(0, |t| t.count);
    let total: u64 = r.txn_types.iter().map(|t| t.count).sum();
    let mut out = vec![
        metric("notpm", per_min(new_orders), "NOTPM", true),
        metric("tpcc.tpm_total", per_min(total), "tpm", true),
    ];
    for t in &r.txn_types {
        let n = &t.name;
        let share = if total > 0 {
            t.count as f64 / total as f64 * 100.0
        } else {
            0.0
        };
        out.push(metric(&format!("{n}.mix_pct"), share, "%", true));
        if let Ok(Some(h)) = read_histogram(0, &t.latency_histogram) {
            let ms = |v: u64| v as f64 / 1000.0;
            out.push(metric(
                &format!("{n}.avg_ms"),
                h.mean() / 1000.0,
                "ms",
                false,
            ));
            out.push(metric(
                &format!("{n}.p90_ms"),
                ms(h.value_at_quantile(0.90)),
                "ms",
                false,
            ));
            out.push(metric(
                &format!("{n}.p99_ms"),
                ms(h.value_at_quantile(0.99)),
                "ms",
                false,
            ));
            out.push(metric(&format!("{n}.max_ms"), ms(h.max()), "ms", false));
        }
        out.push(metric(
            &format!("{n}.rollbacks"),
            t.rollbacks as f64,
            "count",
            false,
        ));
        out.push(metric(
            &format!("{n}.failures"),
            t.failures as f64,
            "count",
            false,
        ));
    }
    out
}

/// The query classes of OSDB's cross-section tests inside a mix (`xs.mu_sel_100_seq`).
const CROSS_PREFIX: &str = "xs.";

/// Tuples per second of one AS3AP-like mix over all users (its own query class), plus
/// queries per second and the 90th percentile response time; then the seconds of each
/// cross-section test timed inside it, and their sum without the checks after the mix.
pub fn as3ap_mix(mix: &str, r: &LoadResult) -> Vec<Metric> {
    let key = mix.replace('-', "_");
    let rows: u64 = r
        .txn_types
        .iter()
        .filter(|t| t.name == key)
        .map(|t| t.rows)
        .sum();
    let secs = r.measured_seconds;
    let rate = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
    let mut cross = Vec::new();
    let mut cross_total = 0.0;
    for t in r
        .txn_types
        .iter()
        .filter(|t| t.name.starts_with(CROSS_PREFIX))
    {
        let Ok(Some(h)) = read_histogram(0, &t.latency_histogram) else {
            continue;
        };
        let s = h.mean() / 1e6;
        if !t.name.starts_with("xs.mu_checkmod") {
            cross_total += s;
        }
        cross.push(metric(&format!("{key}.{}", t.name), s, "s", false));
    }
    if !cross.is_empty() {
        cross.push(metric(
            &format!("{key}.cross_section_s"),
            cross_total,
            "s",
            false,
        ));
    }
    let mut out = vec![
        metric(
            &format!("{key}.tup_per_s"),
            rate(rows as f64),
            "tup/s",
            true,
        ),
        metric(
            &format!("{key}.qps"),
            rate(r.transactions as f64),
            "tps",
            true,
        ),
        metric(&format!("{key}.p90_ms"), r.latency_p90_ms, "ms", false),
    ];
    out.append(&mut cross);
    out
}

/// What the WAL of one window cost per transaction: WAL bytes (the LSN distance), full-page
/// image bytes, the bytes the disks under the data and WAL directories were asked to write
/// (when the agent could read them), and the checkpoints the window held. Without
/// transactions only the checkpoint count is meaningful.
/// A window's WAL and I/O bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WalBytes {
    /// WAL generated (the LSN distance).
    pub wal: u64,
    /// Full-page images in it.
    pub fpi: f64,
    /// Written to the devices under the data and WAL directories, when the agent can tell.
    pub disk: Option<f64>,
    /// WAL segments archived (with `archive_wal`), in bytes.
    pub archived: Option<f64>,
}

pub fn wal(bytes: WalBytes, checkpoints: f64, transactions: u64) -> Vec<Metric> {
    let mut out = Vec::new();
    if transactions > 0 {
        let per = |v: f64| v / transactions as f64;
        out.push(metric(
            "wal_bytes_per_txn",
            per(bytes.wal as f64),
            "B/txn",
            false,
        ));
        out.push(metric("fpi_bytes_per_txn", per(bytes.fpi), "B/txn", false));
        if let Some(d) = bytes.disk {
            out.push(metric("disk_write_bytes_per_txn", per(d), "B/txn", false));
        }
        if let Some(a) = bytes.archived {
            out.push(metric("wal_archived_bytes_per_txn", per(a), "B/txn", false));
        }
    }
    if let Some(d) = bytes.disk {
        out.push(metric("disk_write_bytes", d, "bytes", false));
    }
    out.push(metric("checkpoints_in_window", checkpoints, "count", false));
    out
}

/// The agent's step timings, then their sum as `maint.total_s`.
pub fn maintenance(steps: &[Metric]) -> Vec<Metric> {
    let mut out = dedup(steps.to_vec());
    out.retain(|m| m.name != "maint.total_s");
    let total: f64 = out.iter().filter(|m| m.unit == "s").map(|m| m.value).sum();
    out.insert(0, metric("maint.total_s", total, "s", false));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use blocklab_measure::TxnType;
    use hdrhistogram::Histogram;
    use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};

    fn hist(values_us: &[u64]) -> Vec<u8> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in values_us {
            h.record(*v).unwrap();
        }
        let mut out = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut out).unwrap();
        out
    }

    fn txn(name: &str, count: u64, rollbacks: u64) -> TxnType {
        TxnType {
            name: name.into(),
            count,
            rollbacks,
            latency_histogram: hist(&[1000, 2000, 3000]),
            ..Default::default()
        }
    }

    #[test]
    fn notpm_counts_new_orders_per_minute_of_the_window() {
        let r = LoadResult {
            measured_seconds: 30.0,
            txn_types: vec![txn("new_order", 450, 5), txn("payment", 430, 0)],
            ..Default::default()
        };
        let m = tpcc(&r);
        assert_eq!(m[0].name, "notpm");
        assert_eq!(m[0].unit, "NOTPM");
        assert!((m[0].value - 900.0).abs() < 1e-9);
        assert!(m[0].higher_is_better);
        let get = |n: &str| m.iter().find(|x| x.name == n).unwrap().value;
        assert!((get("tpcc.tpm_total") - 1760.0).abs() < 1e-9);
        assert_eq!(get("new_order.rollbacks"), 5.0);
        assert!((get("new_order.mix_pct") - 450.0 / 880.0 * 100.0).abs() < 1e-9);
        assert!((get("payment.p90_ms") - 3.0).abs() < 0.01);
        assert!(
            !m.iter()
                .find(|x| x.name == "payment.p90_ms")
                .unwrap()
                .higher_is_better
        );
    }

    #[test]
    fn the_headline_goes_first_and_the_rest_keep_their_order() {
        let m = vec![
            metric("a", 1.0, "s", false),
            metric("b", 2.0, "s", false),
            metric("mixed_ir.tup_per_s", 3.0, "tup/s", true),
        ];
        let names: Vec<String> = headline_first(m.clone(), "mixed_ir.tup_per_s")
            .into_iter()
            .map(|m| m.name)
            .collect();
        assert_eq!(names, ["mixed_ir.tup_per_s", "a", "b"]);
        assert_eq!(headline_first(m.clone(), "absent"), m);
    }

    #[test]
    fn notpm_is_zero_without_a_window() {
        let m = tpcc(&LoadResult::default());
        assert_eq!(m[0].value, 0.0);
    }

    #[test]
    fn tuples_per_second_sum_rows_over_the_window() {
        let r = LoadResult {
            measured_seconds: 2.0,
            transactions: 100,
            txn_types: vec![TxnType {
                name: "mixed_ir".into(),
                rows: 300,
                ..Default::default()
            }],
            ..Default::default()
        };
        let m = as3ap_mix("mixed-ir", &r);
        assert_eq!(m[0].name, "mixed_ir.tup_per_s");
        assert_eq!(m[0].unit, "tup/s");
        assert_eq!(m[0].value, 150.0);
        assert_eq!(m[1].value, 50.0);
    }

    #[test]
    fn cross_section_tests_are_seconds_and_not_tuples_of_the_mix() {
        let xs = |name: &str, us: u64, rows: u64| TxnType {
            name: name.into(),
            count: 1,
            rows,
            latency_histogram: hist(&[us]),
            ..Default::default()
        };
        let r = LoadResult {
            measured_seconds: 2.0,
            transactions: 100,
            txn_types: vec![
                TxnType {
                    name: "mixed_oltp".into(),
                    rows: 300,
                    ..Default::default()
                },
                xs("xs.agg_simple_report", 2_500_000, 1),
                xs("xs.mu_sel_100_seq", 500_000, 100),
                xs("xs.mu_checkmod_100_seq", 1_000_000, 100),
            ],
            ..Default::default()
        };
        let m = as3ap_mix("mixed-oltp", &r);
        let get = |n: &str| m.iter().find(|x| x.name == n).unwrap();
        assert_eq!(get("mixed_oltp.tup_per_s").value, 150.0);
        let s = get("mixed_oltp.xs.agg_simple_report");
        assert!((s.value - 2.5).abs() < 0.01, "{s:?}");
        assert_eq!((s.unit.as_str(), s.higher_is_better), ("s", false));
        assert!((get("mixed_oltp.xs.mu_checkmod_100_seq").value - 1.0).abs() < 0.01);
        // The checks after the mix are not part of the cross section's time.
        assert!((get("mixed_oltp.cross_section_s").value - 3.0).abs() < 0.01);
        assert_eq!(m.len(), 7);
    }

    #[test]
    fn wal_costs_are_per_transaction_of_the_window() {
        let bytes = WalBytes {
            wal: 8_000_000,
            fpi: 2_000_000.0,
            disk: Some(12_000_000.0),
            archived: None,
        };
        let m = wal(bytes, 2.0, 4000);
        let get = |n: &str| m.iter().find(|x| x.name == n).unwrap();
        assert_eq!(get("wal_bytes_per_txn").value, 2000.0);
        assert_eq!(get("wal_bytes_per_txn").unit, "B/txn");
        assert_eq!(get("fpi_bytes_per_txn").value, 500.0);
        assert!(!get("fpi_bytes_per_txn").higher_is_better);
        assert_eq!(get("checkpoints_in_window").value, 2.0);
        assert_eq!(get("disk_write_bytes_per_txn").value, 3000.0);
        assert_eq!(get("disk_write_bytes").value, 12_000_000.0);
        assert_eq!(get("disk_write_bytes").unit, "bytes");
        assert!(m.iter().all(|x| x.name != "wal_archived_bytes_per_txn"));
        // With archiving: the archived segments' bytes per transaction.
        let archived = WalBytes {
            archived: Some(16_777_216.0),
            ..bytes
        };
        let m = wal(archived, 2.0, 4096);
        let a = m
            .iter()
            .find(|x| x.name == "wal_archived_bytes_per_txn")
            .unwrap();
        assert_eq!(
            (a.value, a.unit.as_str(), a.higher_is_better),
            (4096.0, "B/txn", false)
        );
        let none = wal(
            WalBytes {
                wal: 100,
                ..WalBytes::default()
            },
            0.0,
            0,
        );
        assert_eq!(none.len(), 1);
        assert_eq!(none[0].name, "checkpoints_in_window");
    }

    #[test]
    fn maintenance_total_sums_the_step_seconds_only() {
        let steps = vec![
            metric("maint.copy", 1.5, "s", false),
            metric("maint.dump_bytes", 1e6, "bytes", false),
            metric("maint.restore", 2.0, "s", false),
            metric("maint.restore", 9.0, "s", false),
        ];
        let m = maintenance(&steps);
        assert_eq!(m[0].name, "maint.total_s");
        assert_eq!(m[0].value, 3.5);
        assert_eq!(m.len(), 4);
    }
}
