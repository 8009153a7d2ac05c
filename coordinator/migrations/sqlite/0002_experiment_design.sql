-- Experiment design, suspect runs, server statistics, builds per host, I/O probes.

-- Dimensions of a cell beyond the page sizes and clients, as a JSON object
-- (e.g. {"source":"pg15","segsize_gb":1,"scale":10,"settings":"small-sb","workload":"ro"}).
ALTER TABLE cells ADD COLUMN dims_json TEXT NOT NULL DEFAULT '{}';
-- Seed of a shuffled run order (NULL for interleaved/sequential).
ALTER TABLE jobs ADD COLUMN seed INTEGER;
-- Why a run's measurement is suspect: JSON array of reasons, NULL when it is not.
ALTER TABLE runs ADD COLUMN suspect_json TEXT;
-- Which attempt produced the result; also the client share of each worker in a distributed run.
CREATE TABLE result_shares (
    run_id              TEXT NOT NULL REFERENCES runs(run_id),
    worker_host_id      TEXT NOT NULL,
    clients             INTEGER NOT NULL,
    transactions        INTEGER NOT NULL,
    failures            INTEGER NOT NULL,
    tps                 REAL NOT NULL,
    latency_avg_ms      REAL NOT NULL,
    latency_p99_ms      REAL NOT NULL,
    client_cpu_user_s   REAL NOT NULL,
    client_cpu_system_s REAL NOT NULL,
    PRIMARY KEY (run_id, worker_host_id)
);
ALTER TABLE results ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN skipped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN late INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN random_seed INTEGER;

-- Server statistics deltas over the measured window (name -> after - before), per run.
CREATE TABLE run_stats (
    run_id  TEXT NOT NULL REFERENCES runs(run_id),
    name    TEXT NOT NULL,
    delta   REAL NOT NULL,
    PRIMARY KEY (run_id, name)
);

-- I/O probe results (job kind "probe").
CREATE TABLE probe_results (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    job_id          TEXT NOT NULL REFERENCES jobs(job_id),
    host_id         TEXT NOT NULL,
    target          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    chunk_bytes     INTEGER NOT NULL,
    mb_per_s        REAL NOT NULL,
    user_cpu_s      REAL NOT NULL,
    system_cpu_s    REAL NOT NULL,
    latency_avg_us  REAL NOT NULL,
    latency_p99_us  REAL NOT NULL,
    cache_dropped   INTEGER NOT NULL,
    bytes           INTEGER NOT NULL,
    device          TEXT NOT NULL,
    filesystem      TEXT NOT NULL,
    PRIMARY KEY (run_id, mode, chunk_bytes)
);

DROP VIEW results_v;
CREATE VIEW results_v AS
SELECT j.job_id, j.name AS job_name, c.cell_index, c.label AS cell,
       c.block_size_kb, c.wal_block_size_kb, c.clients, c.is_baseline, c.dims_json,
       r.run_id, r.repetition, r.sequence, r.attempt, r.started_at,
       r.block_size, r.wal_block_size, r.server_version, r.build_key, r.db_host_id, r.worker_host_id,
       r.suspect_json, (r.suspect_json IS NOT NULL) AS suspect,
       res.transactions, res.failures, res.retries, res.tps, res.tps_incl_conn,
       res.latency_avg_ms, res.latency_stddev_ms, res.latency_p50_ms, res.latency_p90_ms,
       res.latency_p99_ms, res.latency_p999_ms, res.latency_max_ms,
       res.client_cpu_user_s, res.client_cpu_system_s, r.finished_at
FROM results res
JOIN runs r ON r.run_id = res.run_id
JOIN cells c ON c.job_id = r.job_id AND c.cell_index = r.cell_index
JOIN jobs j ON j.job_id = r.job_id;
