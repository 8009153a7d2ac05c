//! A run's per-second samples downsampled when the run is stored (table `run_series`, one row
//! per run), so that pages and charts read at most [`MAX_POINTS`] points per run instead of
//! every raw sample (those stay in `run_samples`, for exports with samples).
//!
//! Downsampling: the run's seconds fall in buckets of `width = last second / MAX_POINTS + 1`
//! consecutive seconds (`second / width`); each bucket keeps its first second, how many
//! samples it holds, the sum, minimum and maximum of transactions and of the mean latency, and
//! the failures summed. Sums (not means) are kept so that buckets merge exactly: the job page
//! merges each run's stored buckets into its own, wider, job-wide buckets ([`rebucket`]).
//!
//! Stored form (`run_series.points`, a BLOB / BYTEA): a version byte (1), then each bucket
//! in second order as 64 little-endian bytes: first second (u32), samples (u32),
//! transactions sum, min and max (u64 each), latency sum, min and max in ms (f64 each),
//! failures (u64).
//!
//! A run stored before this table existed has no series: the job page reads its raw samples
//! instead, downsampled in SQL ([`Catalog::sample_series`]).

use std::collections::{BTreeMap, HashMap};

use blocklab_measure::Sample;
use sqlx::{Any, Row, Transaction};

use super::rows::small;
use super::{Catalog, CatalogError};

/// The most buckets a run's stored series has (the job page draws a run with at most as many).
pub const MAX_POINTS: u32 = 300;

/// The stored form's version byte.
const VERSION: u8 = 1;

/// Bytes of one stored bucket.
const POINT_BYTES: usize = 64;

/// One bucket of consecutive seconds of a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// The bucket's first second.
    pub second: u32,
    /// Samples in the bucket.
    pub seconds: u32,
    pub transactions: u64,
    pub transactions_min: u64,
    pub transactions_max: u64,
    pub latency_sum_ms: f64,
    pub latency_min_ms: f64,
    pub latency_max_ms: f64,
    pub failures: u64,
}

impl Point {
    fn of(s: &Sample) -> Point {
        Point {
            second: s.second,
            seconds: 1,
            transactions: s.transactions,
            transactions_min: s.transactions,
            transactions_max: s.transactions,
            latency_sum_ms: s.latency_avg_ms,
            latency_min_ms: s.latency_avg_ms,
            latency_max_ms: s.latency_avg_ms,
            failures: s.failures,
        }
    }

    fn merge(&mut self, o: &Point) {
        self.second = self.second.min(o.second);
        self.seconds = self.seconds.saturating_add(o.seconds);
        self.transactions = self.transactions.saturating_add(o.transactions);
        self.transactions_min = self.transactions_min.min(o.transactions_min);
        self.transactions_max = self.transactions_max.max(o.transactions_max);
        self.latency_sum_ms += o.latency_sum_ms;
        self.latency_min_ms = self.latency_min_ms.min(o.latency_min_ms);
        self.latency_max_ms = self.latency_max_ms.max(o.latency_max_ms);
        self.failures = self.failures.saturating_add(o.failures);
    }

    /// The bucket as one sample: at its first second, the mean transactions (rounded down)
    /// and latency per second, the failures summed.
    pub fn sample(&self) -> Sample {
        let n = self.seconds.max(1);
        Sample {
            second: self.second,
            transactions: self.transactions / u64::from(n),
            latency_avg_ms: self.latency_sum_ms / f64::from(n),
            failures: self.failures,
        }
    }
}

/// Merges `points` into buckets of `width` seconds (`second / width`), in second order.
fn bucket<'a>(points: impl Iterator<Item = &'a Point>, width: u32) -> Vec<Point> {
    let width = width.max(1);
    let mut out: BTreeMap<u32, Point> = BTreeMap::new();
    for p in points {
        out.entry(p.second / width)
            .and_modify(|b| b.merge(p))
            .or_insert(*p);
    }
    out.into_values().collect()
}

/// The bucket width that gives at most `points` buckets up to second `last`.
pub fn width(last: u32, points: u32) -> u32 {
    last / points.max(1) + 1
}

/// A run's samples in at most [`MAX_POINTS`] buckets, and its last second (`None` without
/// samples).
pub fn downsample(samples: &[Sample]) -> (Vec<Point>, Option<u32>) {
    let Some(last) = samples.iter().map(|s| s.second).max() else {
        return (Vec::new(), None);
    };
    let points: Vec<Point> = samples.iter().map(Point::of).collect();
    (bucket(points.iter(), width(last, MAX_POINTS)), Some(last))
}

/// Stored buckets merged into buckets of `width` seconds, as samples.
pub fn rebucket(points: &[Point], width: u32) -> Vec<Sample> {
    bucket(points.iter(), width)
        .iter()
        .map(Point::sample)
        .collect()
}

/// The stored form of `points`.
pub fn encode(points: &[Point]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + points.len() * POINT_BYTES);
    out.push(VERSION);
    for p in points {
        out.extend_from_slice(&p.second.to_le_bytes());
        out.extend_from_slice(&p.seconds.to_le_bytes());
        for v in [p.transactions, p.transactions_min, p.transactions_max] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [p.latency_sum_ms, p.latency_min_ms, p.latency_max_ms] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&p.failures.to_le_bytes());
    }
    out
}

/// A stored series that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "stored series of {len} bytes is not version {VERSION} with whole {POINT_BYTES}-byte buckets"
)]
pub struct BadSeries {
    len: usize,
}

/// The buckets of a stored series.
pub fn decode(bytes: &[u8]) -> Result<Vec<Point>, BadSeries> {
    let bad = BadSeries { len: bytes.len() };
    let Some((&VERSION, body)) = bytes.split_first() else {
        return Err(bad);
    };
    if body.len() % POINT_BYTES != 0 {
        return Err(bad);
    }
    let u32_at = |c: &[u8], i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
    let u64_at = |c: &[u8], i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&c[i..i + 8]);
        u64::from_le_bytes(b)
    };
    Ok(body
        .chunks_exact(POINT_BYTES)
        .map(|c| Point {
            second: u32_at(c, 0),
            seconds: u32_at(c, 4),
            transactions: u64_at(c, 8),
            transactions_min: u64_at(c, 16),
            transactions_max: u64_at(c, 24),
            latency_sum_ms: f64::from_bits(u64_at(c, 32)),
            latency_min_ms: f64::from_bits(u64_at(c, 40)),
            latency_max_ms: f64::from_bits(u64_at(c, 48)),
            failures: u64_at(c, 56),
        })
        .collect())
}

/// Stores a run's downsampled series, in the transaction that stores its samples (nothing
/// for a run without samples).
pub async fn insert(
    tx: &mut Transaction<'static, Any>,
    run_id: &str,
    samples: &[Sample],
) -> Result<(), CatalogError> {
    let (points, Some(last)) = downsample(samples) else {
        return Ok(());
    };
    sqlx::query(
        "INSERT INTO run_series (run_id, last_second, point_count, points) VALUES ($1, $2, $3, $4)",
    )
    .bind(run_id)
    .bind(i64::from(last))
    .bind(points.len() as i64)
    .bind(encode(&points))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Each stored series of a job's runs.
const STORED: &str = "SELECT s.run_id, s.last_second, s.points FROM run_series s
  JOIN runs r ON r.run_id = s.run_id WHERE r.job_id = $1";

/// The last second of the job's runs without a stored series. The runs are chosen first, so
/// a job whose runs all have one reads no sample.
const RAW_LAST_SECOND: &str = "SELECT CAST(MAX(s.second) AS BIGINT) FROM run_samples s
  WHERE s.run_id IN (SELECT r.run_id FROM runs r WHERE r.job_id = $1
    AND NOT EXISTS (SELECT 1 FROM run_series x WHERE x.run_id = r.run_id))";

/// The raw samples of the job's runs without a stored series in buckets of `$2` seconds
/// (`second / $2`): the first second, the sums and the count. The casts keep the column types
/// alike on every backend (PostgreSQL sums BIGINT to NUMERIC).
const RAW_SERIES: &str = "SELECT s.run_id, CAST(MIN(s.second) AS BIGINT) AS second,
  CAST(SUM(s.transactions) AS BIGINT) AS transactions,
  SUM(s.latency_avg_ms) AS latency_sum, CAST(SUM(s.failures) AS BIGINT) AS failures,
  CAST(COUNT(*) AS BIGINT) AS seconds
  FROM runs r
  JOIN run_samples s ON s.run_id = r.run_id
  WHERE r.job_id = $1 AND NOT EXISTS (SELECT 1 FROM run_series x WHERE x.run_id = r.run_id)
  GROUP BY s.run_id, s.second / CAST($2 AS BIGINT)
  ORDER BY s.run_id, MIN(s.second)";

impl Catalog {
    /// A job's per-second samples in at most `points` points per run (run id → points, in
    /// second order): each point is a bucket of `width(last second of the job, points)`
    /// consecutive seconds, at its first second, with the mean transactions and latency per
    /// second and the failures summed. Read from the stored series; a run without one (stored
    /// before series were kept) from its raw samples.
    pub async fn sample_series(
        &self,
        job_id: &str,
        points: u32,
    ) -> Result<HashMap<String, Vec<Sample>>, CatalogError> {
        let mut stored: Vec<(String, Vec<Point>)> = Vec::new();
        let mut last: Option<i64> = None;
        for row in sqlx::query(STORED)
            .bind(job_id)
            .fetch_all(self.reader())
            .await?
        {
            let run_id: String = row.try_get("run_id")?;
            let bytes: Vec<u8> = row.try_get("points")?;
            let p = decode(&bytes).map_err(|e| CatalogError::Series {
                run_id: run_id.clone(),
                message: e.to_string(),
            })?;
            last = last.max(Some(row.try_get::<i64, _>("last_second")?));
            stored.push((run_id, p));
        }
        let raw_last: Option<i64> = sqlx::query_scalar(RAW_LAST_SECOND)
            .bind(job_id)
            .fetch_one(self.reader())
            .await?;
        let Some(last) = last.max(raw_last) else {
            return Ok(HashMap::new());
        };
        let width = width(small(Some(last.max(0))), points);
        let mut out: HashMap<String, Vec<Sample>> = stored
            .into_iter()
            .map(|(run_id, p)| (run_id, rebucket(&p, width)))
            .collect();
        if raw_last.is_none() {
            return Ok(out);
        }
        for row in sqlx::query(RAW_SERIES)
            .bind(job_id)
            .bind(i64::from(width))
            .fetch_all(self.reader())
            .await?
        {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn s(second: u32, transactions: u64, latency_avg_ms: f64, failures: u64) -> Sample {
        Sample {
            second,
            transactions,
            latency_avg_ms,
            failures,
        }
    }

    #[test]
    fn a_short_run_keeps_one_bucket_a_second() {
        let samples = [s(0, 10, 1.0, 0), s(1, 12, 2.0, 1), s(2, 11, 1.5, 0)];
        let (points, last) = downsample(&samples);
        assert_eq!(last, Some(2));
        assert_eq!(points.len(), 3);
        assert_eq!(
            points[1],
            Point {
                second: 1,
                seconds: 1,
                transactions: 12,
                transactions_min: 12,
                transactions_max: 12,
                latency_sum_ms: 2.0,
                latency_min_ms: 2.0,
                latency_max_ms: 2.0,
                failures: 1,
            }
        );
        assert_eq!(rebucket(&points, 1), samples.to_vec());
    }

    #[test]
    fn a_long_run_is_cut_to_at_most_max_points_buckets_of_known_sums() {
        // Seconds 0..=1199: width 1199 / 300 + 1 = 4, so 300 buckets of 4 seconds.
        let samples: Vec<Sample> = (0..1200)
            .map(|i| s(i, u64::from(i % 7), f64::from(i % 3), u64::from(i == 7)))
            .collect();
        let (points, last) = downsample(&samples);
        assert_eq!(last, Some(1199));
        assert_eq!(points.len(), 300);
        // Bucket 1: seconds 4..=7, transactions 4, 5, 6, 0; latency 1, 2, 0, 1; a failure
        // at second 7.
        assert_eq!(
            points[1],
            Point {
                second: 4,
                seconds: 4,
                transactions: 15,
                transactions_min: 0,
                transactions_max: 6,
                latency_sum_ms: 4.0,
                latency_min_ms: 0.0,
                latency_max_ms: 2.0,
                failures: 1,
            }
        );
        assert_eq!(points[299].second, 1196);
        assert_eq!(points.iter().map(|p| p.seconds).sum::<u32>(), 1200);
        // As a sample: the mean per second, rounded down.
        assert_eq!(points[1].sample(), s(4, 3, 1.0, 1));
    }

    #[test]
    fn stored_buckets_merge_into_wider_ones_exactly() {
        // Seconds 0..=9 as one bucket a second, merged into buckets of 4 seconds.
        let samples: Vec<Sample> = (0..10).map(|i| s(i, 10 * u64::from(i), 1.0, 0)).collect();
        let (points, _) = downsample(&samples);
        assert_eq!(
            rebucket(&points, 4),
            vec![s(0, 15, 1.0, 0), s(4, 55, 1.0, 0), s(8, 85, 1.0, 0)]
        );
        assert_eq!(width(9, 3), 4);
        assert_eq!(width(2_000, 200), 11);
    }

    #[test]
    fn the_stored_form_reads_back_and_refuses_what_it_is_not() {
        let (points, _) = downsample(&[s(3, 7, 0.25, 2), s(4, 9, 0.75, 0)]);
        let bytes = encode(&points);
        assert_eq!(bytes.len(), 1 + 2 * 64);
        assert_eq!(bytes[0], 1);
        // Second 3, one sample, then transactions 7 as little-endian bytes.
        assert_eq!(&bytes[1..13], &[3, 0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(decode(&bytes), Ok(points));
        assert!(decode(&[]).is_err());
        assert!(decode(&[2]).is_err());
        assert!(decode(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(decode(&[1]), Ok(Vec::new()));
    }

    #[test]
    fn no_samples_no_series() {
        assert_eq!(downsample(&[]), (Vec::new(), None));
    }
}
