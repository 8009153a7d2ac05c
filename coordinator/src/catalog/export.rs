//! Read-only catalog queries that gather one job into a [`JobExport`].

use std::collections::{BTreeSet, HashMap};

use blocklab_measure::job::*;
use blocklab_measure::{Metric, Sample};
use sqlx::Row;
use sqlx::any::AnyRow;

use sqlx::FromRow;

use super::rows::{RunRow, small};
use super::{Catalog, CatalogError, JobRecord};
use blocklab_spec::JobPlan;

fn u32c(row: &AnyRow, col: &str) -> Result<u32, sqlx::Error> {
    Ok(small(row.try_get::<Option<i64>, _>(col)?))
}

fn u64c(row: &AnyRow, col: &str) -> Result<u64, sqlx::Error> {
    let v: Option<i64> = row.try_get(col)?;
    Ok(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(0))
}

fn text(row: &AnyRow, col: &str) -> Result<String, sqlx::Error> {
    Ok(row.try_get::<Option<String>, _>(col)?.unwrap_or_default())
}

/// Reasons from `runs.suspect_json`: a JSON array of strings. NULL, `[]` and blank mean not
/// suspect; anything else that is not such an array is kept as one reason, verbatim.
pub fn suspect_reasons(json: Option<&str>) -> Vec<String> {
    let Some(raw) = json
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != "null")
    else {
        return Vec::new();
    };
    match serde_json::from_str::<serde_json::Value>(raw) {
        Ok(serde_json::Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            })
            .collect(),
        Ok(serde_json::Value::String(s)) => vec![s],
        _ => vec![raw.to_string()],
    }
}

const JOB: &str = "SELECT j.job_id, j.name, j.state, j.error, j.db_host_id, j.created_at,
  j.started_at, j.finished_at, j.spec_toml, j.run_order, j.seed,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id) AS runs_total,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id AND r.state = 'done') AS runs_done,
  (SELECT count(*) FROM runs r WHERE r.job_id = j.job_id AND r.state = 'failed') AS runs_failed
  FROM jobs j WHERE j.job_id = $1";

const RUNS: &str = "SELECT r.run_id, r.cell_index, r.repetition, r.sequence, r.attempt, r.state,
  r.stage, r.error, r.started_at, r.finished_at, r.db_host_id, r.worker_host_id, r.build_key,
  r.build_reused, r.server_version, r.block_size, r.wal_block_size, r.suspect_json,
  res.run_id AS res_run_id, res.transactions, res.failures, res.retries, res.tps, res.tps_incl_conn,
  res.latency_avg_ms, res.latency_stddev_ms, res.latency_p50_ms, res.latency_p90_ms,
  res.latency_p99_ms, res.latency_p999_ms, res.latency_max_ms, res.connection_time_ms,
  res.measured_seconds, res.client_cpu_user_s, res.client_cpu_system_s,
  res.schedule_lag_avg_ms, res.schedule_lag_max_ms, res.late, res.skipped
  FROM runs r LEFT JOIN results res ON res.run_id = r.run_id
  WHERE r.job_id = $1 ORDER BY r.sequence";

fn metrics(row: &AnyRow) -> Result<Option<RunMetrics>, sqlx::Error> {
    if row.try_get::<Option<String>, _>("res_run_id")?.is_none() {
        return Ok(None);
    }
    let f = |c: &str| row.try_get::<f64, _>(c);
    // NULL in runs stored before the column was kept.
    let lag = |c: &str| Ok::<_, sqlx::Error>(row.try_get::<Option<f64>, _>(c)?.unwrap_or(0.0));
    Ok(Some(RunMetrics {
        transactions: u64c(row, "transactions")?,
        failures: u64c(row, "failures")?,
        retries: u64c(row, "retries")?,
        tps: f("tps")?,
        tps_incl_conn: f("tps_incl_conn")?,
        latency_avg_ms: f("latency_avg_ms")?,
        latency_stddev_ms: f("latency_stddev_ms")?,
        latency_p50_ms: f("latency_p50_ms")?,
        latency_p90_ms: f("latency_p90_ms")?,
        latency_p99_ms: f("latency_p99_ms")?,
        latency_p999_ms: f("latency_p999_ms")?,
        latency_max_ms: f("latency_max_ms")?,
        connection_time_ms: f("connection_time_ms")?,
        measured_seconds: f("measured_seconds")?,
        client_cpu_user_s: f("client_cpu_user_s")?,
        client_cpu_system_s: f("client_cpu_system_s")?,
        extra: Vec::new(),
        schedule_lag_avg_ms: lag("schedule_lag_avg_ms")?,
        schedule_lag_max_ms: lag("schedule_lag_max_ms")?,
        late: u64c(row, "late")?,
        skipped: u64c(row, "skipped")?,
        statements: Vec::new(),
    }))
}

fn run(row: &AnyRow) -> Result<ExportRun, CatalogError> {
    let suspect: Option<String> = row.try_get("suspect_json")?;
    let r = RunRow::from_row(row)?;
    Ok(ExportRun {
        state: r.state()?.to_string(),
        stage: r.stage()?.to_string(),
        run_id: r.run_id,
        cell_index: small(r.cell_index),
        repetition: small(r.repetition),
        sequence: small(r.sequence),
        attempt: small(r.attempt),
        error: r.error.unwrap_or_default(),
        started_at: text(row, "started_at")?,
        finished_at: text(row, "finished_at")?,
        db_host_id: text(row, "db_host_id")?,
        worker_host_id: text(row, "worker_host_id")?,
        build_key: r.build_key.unwrap_or_default(),
        build_reused: r.build_reused.is_some_and(|b| b != 0),
        server_version: text(row, "server_version")?,
        block_size: small(r.block_size),
        wal_block_size: small(r.wal_block_size),
        suspect_reasons: suspect_reasons(suspect.as_deref()),
        result: metrics(row)?,
        ..Default::default()
    })
}

/// Reads one job with its cells, runs (and, if asked, their per-second samples), settings,
/// server-stat deltas, builds and the hosts it used. Statistics are left empty.
pub async fn export_job(
    catalog: &Catalog,
    job_id: &str,
    include_samples: bool,
) -> Result<JobExport, CatalogError> {
    let db = catalog.reader();
    let j = sqlx::query(JOB)
        .bind(job_id)
        .fetch_optional(db)
        .await?
        .ok_or_else(|| CatalogError::JobNotFound(job_id.to_string()))?;
    let spec_toml: String = j.try_get("spec_toml")?;
    let job = JobSummary::from(&catalog.job(job_id).await?);
    let finished_at = text(&j, "finished_at")?;
    let mut cells = sqlx::query("SELECT cell_index, label, block_size_kb, wal_block_size_kb, clients, is_baseline, dims_json FROM cells WHERE job_id = $1 ORDER BY cell_index")
        .bind(job_id)
        .fetch_all(db)
        .await?
        .iter()
        .map(|r| {
            Ok(ExportCell {
                cell_index: u32c(r, "cell_index")?,
                label: r.try_get("label")?,
                block_size_kb: u32c(r, "block_size_kb")?,
                wal_block_size_kb: u32c(r, "wal_block_size_kb")?,
                clients: u32c(r, "clients")?,
                is_baseline: super::rows::flag_of(r, "is_baseline")?.unwrap_or(false),
                dims_json: text(r, "dims_json")?,
                ..Default::default()
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    let plan = catalog.job_plan(job_id).await.ok();
    let analysis = plan_links(plan.as_ref(), &mut cells);
    let mut runs = sqlx::query(RUNS)
        .bind(job_id)
        .fetch_all(db)
        .await?
        .iter()
        .map(run)
        .collect::<Result<Vec<_>, _>>()?;
    let index: HashMap<String, usize> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.run_id.clone(), i))
        .collect();
    for row in sqlx::query("SELECT run_id, name, setting, unit, source FROM run_settings WHERE run_id IN (SELECT run_id FROM runs WHERE job_id = $1) ORDER BY name")
        .bind(job_id)
        .fetch_all(db)
        .await?
    {
        if let Some(&i) = index.get(&row.try_get::<String, _>("run_id")?) {
            runs[i].settings.push(EffectiveSetting {
                name: row.try_get("name")?,
                setting: row.try_get("setting")?,
                unit: row.try_get("unit")?,
                source: row.try_get("source")?,
            });
        }
    }
    for row in sqlx::query(
        "SELECT run_id, name, value, unit, higher_is_better FROM run_metrics WHERE run_id IN (SELECT run_id FROM runs WHERE job_id = $1) ORDER BY run_id, position",
    )
    .bind(job_id)
    .fetch_all(db)
    .await?
    {
        if let Some(&i) = index.get(&row.try_get::<String, _>("run_id")?)
            && let Some(result) = runs[i].result.as_mut()
        {
            result.extra.push(Metric {
                name: row.try_get("name")?,
                value: row.try_get("value")?,
                unit: row.try_get("unit")?,
                higher_is_better: super::rows::flag_of(&row, "higher_is_better")?.unwrap_or(false),
            });
        }
    }
    for row in sqlx::query(
        "SELECT run_id, script, position, command, count, latency_avg_ms, failures FROM run_statements WHERE run_id IN (SELECT run_id FROM runs WHERE job_id = $1) ORDER BY run_id, script_index, position",
    )
    .bind(job_id)
    .fetch_all(db)
    .await?
    {
        if let Some(&i) = index.get(&row.try_get::<String, _>("run_id")?)
            && let Some(result) = runs[i].result.as_mut()
        {
            result.statements.push(StatementLatency {
                script: row.try_get("script")?,
                position: u32c(&row, "position")?,
                command: row.try_get("command")?,
                count: u64c(&row, "count")?,
                latency_avg_ms: row.try_get("latency_avg_ms")?,
                failures: u64c(&row, "failures")?,
            });
        }
    }
    for row in sqlx::query(
        "SELECT run_id, name, delta FROM run_stats WHERE run_id IN (SELECT run_id FROM runs WHERE job_id = $1) ORDER BY name",
    )
    .bind(job_id)
    .fetch_all(db)
    .await?
    {
        if let Some(&i) = index.get(&row.try_get::<String, _>("run_id")?) {
            runs[i].server_stats.push(ServerStatDelta {
                name: row.try_get("name")?,
                delta: row.try_get("delta")?,
            });
        }
    }
    if include_samples {
        for row in sqlx::query("SELECT run_id, second, transactions, latency_avg_ms, failures FROM run_samples WHERE run_id IN (SELECT run_id FROM runs WHERE job_id = $1) ORDER BY run_id, second")
            .bind(job_id)
            .fetch_all(db)
            .await?
        {
            if let Some(&i) = index.get(&row.try_get::<String, _>("run_id")?) {
                runs[i].samples.push(Sample {
                    second: u32c(&row, "second")?,
                    transactions: u64c(&row, "transactions")?,
                    latency_avg_ms: row.try_get("latency_avg_ms")?,
                    failures: u64c(&row, "failures")?,
                });
            }
        }
    }
    let builds = sqlx::query("SELECT host_id, build_key, block_size_kb, wal_block_size_kb, source_sha256, pg_version, reused, build_seconds, recorded_at FROM builds WHERE job_id = $1 ORDER BY block_size_kb, wal_block_size_kb, build_key")
        .bind(job_id)
        .fetch_all(db)
        .await?
        .iter()
        .map(|r| {
            Ok(ExportBuild {
                host_id: r.try_get("host_id")?,
                build_key: r.try_get("build_key")?,
                block_size_kb: u32c(r, "block_size_kb")?,
                wal_block_size_kb: u32c(r, "wal_block_size_kb")?,
                source_sha256: r.try_get("source_sha256")?,
                pg_version: r.try_get("pg_version")?,
                reused: super::rows::flag_of(r, "reused")?.unwrap_or(false),
                build_seconds: r.try_get("build_seconds")?,
                recorded_at: r.try_get("recorded_at")?,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    let hosts = hosts(catalog, &job.db_host_id, &runs, &finished_at).await?;
    let seed: Option<i64> = j.try_get("seed")?;
    Ok(JobExport {
        spec_toml,
        run_order: j.try_get("run_order")?,
        seed: seed.map(|s| s as u64),
        started_at: text(&j, "started_at")?,
        finished_at,
        job: Some(job),
        cells,
        runs,
        builds,
        hosts,
        analysis,
        ..Default::default()
    })
}

/// Fills each cell's baseline and what it is compared on from the stored plan, and gives
/// the job's analysis options (`None` for probes and plans that cannot be read).
fn plan_links(plan: Option<&JobPlan>, cells: &mut [ExportCell]) -> Option<AnalysisOptions> {
    let Some(JobPlan::Benchmark { spec, plan }) = plan else {
        return None;
    };
    for c in cells.iter_mut() {
        if let Some(p) = plan.cells.get(c.cell_index as usize) {
            c.baseline_cell_index = p.baseline_cell;
            c.compared_on = p
                .compared_on
                .map(|a| a.as_str().to_string())
                .unwrap_or_default();
            c.replicate = p.replicate;
            c.series_point = spec
                .series
                .iter()
                .position(|s| *s == p.source)
                .map(|i| i as u32);
        }
    }
    Some(AnalysisOptions {
        equivalence_pct: spec.analysis.equivalence_pct,
        exclude_suspect: spec.analysis.exclude_suspect,
        target_ci_pct: spec.adaptive.and_then(|a| a.target_ci_pct),
        min_repetitions: spec.repetitions,
        max_repetitions: spec.adaptive.map_or(spec.repetitions, |a| a.max),
        until_decided: spec.adaptive.is_some_and(|a| a.until_decided),
        budget_seconds: spec
            .adaptive
            .and_then(|a| a.budget)
            .map(|b| b.as_secs_f64()),
        race: spec.search == blocklab_spec::Search::Race,
    })
}

/// The job's database host first, then every other host its runs used, each with the facts
/// it last reported before the job finished.
async fn hosts(
    catalog: &Catalog,
    db_host: &str,
    runs: &[ExportRun],
    finished_at: &str,
) -> Result<Vec<ExportHost>, CatalogError> {
    let mut ids: Vec<String> = Vec::new();
    let others: BTreeSet<&str> = runs
        .iter()
        .flat_map(|r| [r.db_host_id.as_str(), r.worker_host_id.as_str()])
        .filter(|h| !h.is_empty() && *h != db_host)
        .collect();
    if !db_host.is_empty() {
        ids.push(db_host.to_string());
    }
    ids.extend(others.into_iter().map(String::from));
    let until = if finished_at.is_empty() {
        "9999"
    } else {
        finished_at
    };
    let mut out = Vec::new();
    for id in ids {
        let Some(h) = sqlx::query(
            "SELECT h.host_id, h.role, h.labels, h.address, h.version, h.facts_json, h.last_seen,
               (SELECT f.facts_json FROM host_facts f WHERE f.host_id = h.host_id AND f.seen_at <= $1
                ORDER BY f.seen_at DESC LIMIT 1) AS facts_then,
               (SELECT f.seen_at FROM host_facts f WHERE f.host_id = h.host_id AND f.seen_at <= $2
                ORDER BY f.seen_at DESC LIMIT 1) AS seen_then
             FROM hosts h WHERE h.host_id = $3",
        )
        .bind(until)
        .bind(until)
        .bind(&id)
        .fetch_optional(catalog.reader())
        .await?
        else {
            continue;
        };
        let labels: String = h.try_get("labels")?;
        let then: Option<String> = h.try_get("facts_then")?;
        out.push(ExportHost {
            is_job_db_host: id == db_host,
            host_id: id,
            role: h.try_get("role")?,
            labels: serde_json::from_str(&labels).unwrap_or_default(),
            address: h.try_get("address")?,
            version: h.try_get("version")?,
            facts_seen_at: if then.is_some() {
                text(&h, "seen_then")?
            } else {
                h.try_get("last_seen")?
            },
            facts_json: match then {
                Some(f) => f,
                None => h.try_get("facts_json")?,
            },
        });
    }
    Ok(out)
}

impl From<&JobRecord> for JobSummary {
    fn from(j: &JobRecord) -> Self {
        JobSummary {
            job_id: j.job_id.clone(),
            name: j.name.clone(),
            state: j.state.to_string(),
            created_at: j.created_at.clone(),
            runs_total: j.runs_total,
            runs_done: j.runs_done,
            runs_failed: j.runs_failed,
            db_host_id: j.db_host_id.clone().unwrap_or_default(),
            error: j.error.clone().unwrap_or_default(),
            kind: j.kind.to_string(),
            workload: j.workload.clone(),
            headline_metric: j.headline_metric.clone(),
            waiting: j.waiting.clone().unwrap_or_default(),
            build: j.build_progress.as_ref().map(build_progress),
            rerun_of: j.rerun_of.clone().unwrap_or_default(),
        }
    }
}

/// A build's progress as a job summary shows it.
fn build_progress(b: &blocklab_spec::BuildProgress) -> BuildProgress {
    BuildProgress {
        block_size_kb: b.block_size_kb,
        wal_block_size_kb: b.wal_block_size_kb,
        step: b.step.as_str().to_string(),
        percent: b.percent,
        estimated: b.estimated,
        eta_seconds: b.eta_seconds.map(|s| u32::try_from(s).unwrap_or(u32::MAX)),
    }
}
