//! Read-only queries of the dashboard: where and on what each job's done runs ran (the
//! history pages' filters), and a job's per-second samples downsampled in SQL to a bounded
//! number of points per run (the job page's traces). Portable SQL with `$n` placeholders.

use std::collections::{BTreeSet, HashMap};

use blocklab_measure::Sample;
use sqlx::Row;

use super::rows::small;
use super::{Catalog, CatalogError};

/// The database hosts and PostgreSQL versions of a job's done runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RanOn {
    pub hosts: BTreeSet<String>,
    pub versions: BTreeSet<String>,
}

const RAN_ON: &str = "SELECT job_id, db_host_id, server_version FROM runs
  WHERE state = 'done' AND db_host_id IS NOT NULL
  GROUP BY job_id, db_host_id, server_version";

/// The last second of any run of the job.
const LAST_SECOND: &str = "SELECT CAST(MAX(s.second) AS BIGINT) FROM run_samples s
  JOIN runs r ON r.run_id = s.run_id WHERE r.job_id = $1";

/// Each run's seconds in buckets of `$2` seconds (`second / $2`): the first second, the sums
/// and the count. With `$2 = (last second of the job) / points + 1` every run gives at most
/// `points` points. The casts keep the column types alike on every backend (PostgreSQL sums
/// BIGINT to NUMERIC).
const SERIES: &str = "SELECT s.run_id, CAST(MIN(s.second) AS BIGINT) AS second,
  CAST(SUM(s.transactions) AS BIGINT) AS transactions,
  SUM(s.latency_avg_ms) AS latency_sum, CAST(SUM(s.failures) AS BIGINT) AS failures,
  CAST(COUNT(*) AS BIGINT) AS seconds
  FROM run_samples s
  JOIN runs r ON r.run_id = s.run_id
  WHERE r.job_id = $1
  GROUP BY s.run_id, s.second / CAST($2 AS BIGINT)
  ORDER BY s.run_id, MIN(s.second)";

impl Catalog {
    /// Every job's database hosts and server versions, from its done runs.
    pub async fn ran_on(&self) -> Result<HashMap<String, RanOn>, CatalogError> {
        let mut out: HashMap<String, RanOn> = HashMap::new();
        for row in sqlx::query(RAN_ON).fetch_all(self.reader()).await? {
            let e = out.entry(row.try_get("job_id")?).or_default();
            if let Some(h) = row.try_get::<Option<String>, _>("db_host_id")? {
                e.hosts.insert(h);
            }
            if let Some(v) = row
                .try_get::<Option<String>, _>("server_version")?
                .filter(|v| !v.is_empty())
            {
                e.versions.insert(v);
            }
        }
        Ok(out)
    }

    /// A job's per-second samples in at most `points` points per run (run id → points, in
    /// second order): each point is a bucket of consecutive seconds, at its first second, with
    /// the mean transactions and latency per second and the failures summed.
    pub async fn sample_series(
        &self,
        job_id: &str,
        points: u32,
    ) -> Result<HashMap<String, Vec<Sample>>, CatalogError> {
        let mut out: HashMap<String, Vec<Sample>> = HashMap::new();
        let last: Option<i64> = sqlx::query_scalar(LAST_SECOND)
            .bind(job_id)
            .fetch_one(self.reader())
            .await?;
        let Some(last) = last else {
            return Ok(out);
        };
        let rows = sqlx::query(SERIES)
            .bind(job_id)
            .bind(last.max(0) / i64::from(points.max(1)) + 1)
            .fetch_all(self.reader())
            .await?;
        for row in rows {
            let seconds = row.try_get::<i64, _>("seconds")?.max(1);
            let transactions: i64 = row.try_get("transactions")?;
            let latency: f64 = row.try_get("latency_sum")?;
            let failures: i64 = row.try_get("failures")?;
            out.entry(row.try_get("run_id")?).or_default().push(Sample {
                second: small(row.try_get::<Option<i64>, _>("second")?),
                transactions: u64::try_from(transactions / seconds).unwrap_or(0),
                latency_avg_ms: latency / seconds as f64,
                failures: u64::try_from(failures).unwrap_or(0),
            });
        }
        Ok(out)
    }
}
