-- Documented views for people (README: "Querying the catalog with SQL").
--
-- Suspect runs follow the rule `blocklab results` applies: a measured run is suspect when
-- runs.suspect_json holds at least one reason; a suspect run is left out of its cell's
-- statistics unless that would leave the cell with fewer than 2 runs, in which case all the
-- cell's runs are used. `in_stats` says whether a run is used.

-- Measured runs (done, with a result) and whether each is suspect.
CREATE VIEW measured_v AS
SELECT r.run_id, r.job_id, r.cell_index,
       CASE
         WHEN r.suspect_json IS NULL OR trim(r.suspect_json) IN ('', 'null') THEN 0
         WHEN json_valid(r.suspect_json) AND json_type(r.suspect_json) = 'array'
           THEN json_array_length(r.suspect_json) > 0
         ELSE 1
       END AS suspect
FROM runs r
JOIN results res ON res.run_id = r.run_id
WHERE r.state = 'done';

-- One row per measured run, with its cell, the proof of what was measured, the suspect
-- reasons and whether the run enters its cell's statistics.
DROP VIEW results_v;
CREATE VIEW results_v AS
SELECT j.job_id, j.name AS job_name, c.cell_index, c.label AS cell,
       c.block_size_kb, c.wal_block_size_kb, c.clients, c.is_baseline, c.dims_json,
       r.run_id, r.repetition, r.sequence, r.attempt, r.started_at,
       r.block_size, r.wal_block_size, r.server_version, r.build_key, r.db_host_id, r.worker_host_id,
       r.suspect_json, m.suspect,
       (m.suspect = 0 OR (SELECT count(*) FROM measured_v m2
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

-- One row per cell: runs, proven sizes, and means over the runs in its statistics
-- (tps_mean_all: over every measured run, suspect or not). tps_variance is the sample
-- variance (n-1); the stddev is its square root (sqrt() in the sqlite3 shell).
DROP VIEW cells_v;
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

-- Each cell next to its baseline cell (the cell flagged baseline with the same clients and the
-- same dimensions other than the source) and the % change of the means. No test of
-- significance here: `blocklab results` adds the CI, Welch's p-value and the verdict.
CREATE VIEW comparison_v AS
SELECT c.job_id, c.job_name, c.cell_index, c.cell, c.block_size_kb, c.wal_block_size_kb,
       c.clients, c.dims_json, c.is_baseline, c.block_size, c.wal_block_size, c.n, c.runs_suspect,
       c.tps_mean, b.cell AS baseline_cell, b.n AS baseline_n, b.tps_mean AS baseline_tps_mean,
       100.0 * (c.tps_mean - b.tps_mean) / b.tps_mean AS tps_pct_change,
       c.latency_p99_ms_mean, b.latency_p99_ms_mean AS baseline_latency_p99_ms_mean,
       100.0 * (c.latency_p99_ms_mean - b.latency_p99_ms_mean) / b.latency_p99_ms_mean
         AS latency_p99_pct_change
FROM cells_v c
LEFT JOIN cells_v b ON b.job_id = c.job_id AND b.is_baseline = 1 AND b.clients = c.clients
  AND json_remove(b.dims_json, '$.source') = json_remove(c.dims_json, '$.source');
