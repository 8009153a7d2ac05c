-- Views after the calibrated verdicts: by default every completed run enters its cell's
-- statistics (`in_stats` = 1); a job whose spec excludes suspect runs
-- (`suspect_runs = "exclude"`) leaves them out unless that would leave the cell with fewer
-- than 2 runs. Each cell is compared with the baseline its stored plan names (one axis per
-- cell; `compared_on` says which), else, for plans stored before, with the cell flagged
-- baseline that has the same clients and dimensions other than the source.

DROP VIEW comparison_v;
DROP VIEW cells_v;
DROP VIEW results_v;

CREATE VIEW results_v AS
SELECT j.job_id, j.name AS job_name, c.cell_index, c.label AS cell,
       c.block_size_kb, c.wal_block_size_kb, c.clients, c.is_baseline, c.dims_json,
       r.run_id, r.repetition, r.sequence, r.attempt, r.started_at,
       r.block_size, r.wal_block_size, r.server_version, r.build_key, r.db_host_id, r.worker_host_id,
       r.suspect_json, m.suspect,
       (m.suspect = 0
        OR coalesce(json_extract(j.plan_json, '$.Benchmark.spec.analysis.exclude_suspect'), 0) = 0
        OR (SELECT count(*) FROM measured_v m2
            WHERE m2.job_id = m.job_id AND m2.cell_index = m.cell_index
              AND m2.suspect = 0) < 2) AS in_stats,
       res.transactions, res.failures, res.retries, res.tps, res.tps_incl_conn,
       res.latency_avg_ms, res.latency_stddev_ms, res.latency_p50_ms, res.latency_p90_ms,
       res.latency_p99_ms, res.latency_p999_ms, res.latency_max_ms,
       res.client_cpu_user_s, res.client_cpu_system_s, r.finished_at
FROM measured_v m
JOIN runs r ON r.run_id = m.run_id
JOIN results res ON res.run_id = m.run_id
JOIN cells c ON c.job_id = r.job_id AND c.cell_index = r.cell_index
JOIN jobs j ON j.job_id = r.job_id;

CREATE VIEW cells_v AS
SELECT c.job_id, j.name AS job_name, c.cell_index, c.label AS cell, c.block_size_kb,
       c.wal_block_size_kb, c.clients, c.is_baseline, c.dims_json,
       (SELECT count(*) FROM runs r WHERE r.job_id = c.job_id AND r.cell_index = c.cell_index) AS runs_total,
       count(v.run_id) AS runs_done,
       coalesce(sum(v.suspect), 0) AS runs_suspect,
       coalesce(sum(v.in_stats), 0) AS n,
       max(v.block_size) AS block_size, max(v.wal_block_size) AS wal_block_size,
       avg(CASE WHEN v.in_stats THEN v.tps END) AS tps_mean,
       CASE WHEN sum(v.in_stats) > 1 THEN
         (sum(CASE WHEN v.in_stats THEN v.tps * v.tps END)
          - sum(CASE WHEN v.in_stats THEN v.tps END) * sum(CASE WHEN v.in_stats THEN v.tps END) / sum(v.in_stats))
         / (sum(v.in_stats) - 1)
       END AS tps_variance,
       avg(v.tps) AS tps_mean_all,
       avg(CASE WHEN v.in_stats THEN v.latency_avg_ms END) AS latency_avg_ms_mean,
       avg(CASE WHEN v.in_stats THEN v.latency_p99_ms END) AS latency_p99_ms_mean
FROM cells c
JOIN jobs j ON j.job_id = c.job_id
LEFT JOIN results_v v ON v.job_id = c.job_id AND v.cell_index = c.cell_index
GROUP BY c.job_id, c.cell_index;


CREATE VIEW comparison_v AS
SELECT c.job_id, c.job_name, c.cell_index, c.cell, c.block_size_kb, c.wal_block_size_kb,
       c.clients, c.dims_json, c.is_baseline, c.block_size, c.wal_block_size, c.n, c.runs_suspect,
       json_extract(j.plan_json, '$.Benchmark.plan.cells[' || c.cell_index || '].compared_on')
         AS compared_on,
       c.tps_mean, b.cell AS baseline_cell, b.n AS baseline_n, b.tps_mean AS baseline_tps_mean,
       100.0 * (c.tps_mean - b.tps_mean) / b.tps_mean AS tps_pct_change,
       c.latency_p99_ms_mean, b.latency_p99_ms_mean AS baseline_latency_p99_ms_mean,
       100.0 * (c.latency_p99_ms_mean - b.latency_p99_ms_mean) / b.latency_p99_ms_mean
         AS latency_p99_pct_change
FROM cells_v c
JOIN jobs j ON j.job_id = c.job_id
LEFT JOIN cells_v b ON b.job_id = c.job_id AND CASE
    WHEN json_extract(j.plan_json, '$.Benchmark.plan.cells[0].memory_reference') IS NOT NULL
      THEN b.cell_index = json_extract(j.plan_json,
             '$.Benchmark.plan.cells[' || c.cell_index || '].baseline_cell')
    ELSE b.is_baseline = 1 AND b.clients = c.clients
      AND json_remove(b.dims_json, '$.source') = json_remove(c.dims_json, '$.source')
  END;
