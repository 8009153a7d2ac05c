//! The metrics a cell's statistics are about: pgbench's columns and the workload kinds' own.

/// Units that describe a run rather than rate it: counts, shares of a mix, sizes and the
/// per-transaction costs (WAL and full-page-image bytes per transaction). Their comparisons
/// get the change and its CI but no verdict, and they are not in the family of comparisons
/// the q-values are made over.
pub const DESCRIPTIVE_UNITS: [&str; 4] = ["count", "%", "bytes", "B/txn"];

/// A per-run metric that can be summarised: a column of `results` (pgbench's measures, which
/// every run has) or a metric of the workload kind (`run_metrics`: NOTPM, seconds per query,
/// tuples per second, ...).
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    Tps,
    TpsInclConn,
    LatencyAvgMs,
    LatencyP50Ms,
    LatencyP90Ms,
    LatencyP99Ms,
    LatencyP999Ms,
    LatencyMaxMs,
    Workload {
        name: String,
        unit: String,
        higher_is_better: bool,
    },
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("metric: unknown metric {name:?}; allowed: {allowed}")]
    UnknownMetric { name: String, allowed: String },
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::Tps,
        Metric::TpsInclConn,
        Metric::LatencyAvgMs,
        Metric::LatencyP50Ms,
        Metric::LatencyP90Ms,
        Metric::LatencyP99Ms,
        Metric::LatencyP999Ms,
        Metric::LatencyMaxMs,
    ];

    /// The metric's name: its column in `results` / `results_v`, or its `run_metrics.name`.
    pub fn name(&self) -> &str {
        match self {
            Metric::Tps => "tps",
            Metric::TpsInclConn => "tps_incl_conn",
            Metric::LatencyAvgMs => "latency_avg_ms",
            Metric::LatencyP50Ms => "latency_p50_ms",
            Metric::LatencyP90Ms => "latency_p90_ms",
            Metric::LatencyP99Ms => "latency_p99_ms",
            Metric::LatencyP999Ms => "latency_p999_ms",
            Metric::LatencyMaxMs => "latency_max_ms",
            Metric::Workload { name, .. } => name,
        }
    }

    /// Throughput: higher is better; latency and durations: lower is better.
    pub fn higher_is_better(&self) -> bool {
        match self {
            Metric::Workload {
                higher_is_better, ..
            } => *higher_is_better,
            m => matches!(m, Metric::Tps | Metric::TpsInclConn),
        }
    }

    pub fn unit(&self) -> &str {
        match self {
            Metric::Workload { unit, .. } => unit,
            m if m.higher_is_better() => "tps",
            _ => "ms",
        }
    }

    /// A count, share, size or per-transaction cost: described, not judged (no faster or
    /// slower, see [`DESCRIPTIVE_UNITS`]).
    pub fn is_descriptive(&self) -> bool {
        DESCRIPTIVE_UNITS.contains(&self.unit())
    }

    /// Digits after the decimal point that suit the unit.
    pub fn decimals(&self) -> usize {
        match self.unit() {
            "s" => 4,
            "ms" => 3,
            "count" | "bytes" => 0,
            _ => 1,
        }
    }

    /// Comma-separated list of the pgbench metric names.
    pub fn allowed() -> String {
        Metric::ALL.map(|m| m.name().to_string()).join(", ")
    }

    /// Parses a pgbench metric name; the empty string means `tps`.
    pub fn parse(s: &str) -> Result<Metric, StatsError> {
        if s.is_empty() {
            return Ok(Metric::Tps);
        }
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| StatsError::UnknownMetric {
                name: s.to_string(),
                allowed: Metric::allowed(),
            })
    }

    /// A pgbench metric by name, else one of `known` (a job's workload metrics as (name,
    /// unit, higher is better)); the error lists both.
    pub fn resolve(s: &str, known: &[(String, String, bool)]) -> Result<Metric, StatsError> {
        if let Ok(m) = Metric::parse(s) {
            return Ok(m);
        }
        known
            .iter()
            .find(|(n, _, _)| n == s)
            .map(|(n, u, h)| Metric::Workload {
                name: n.clone(),
                unit: u.clone(),
                higher_is_better: *h,
            })
            .ok_or_else(|| {
                let mut allowed = Metric::allowed();
                for (n, _, _) in known {
                    allowed.push_str(", ");
                    allowed.push_str(n);
                }
                StatsError::UnknownMetric {
                    name: s.to_string(),
                    allowed,
                }
            })
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
