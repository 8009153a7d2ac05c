-- blocklab catalog on PostgreSQL: the schema SQLite reaches with migrations 0001-0015, in one
-- step (a later migration NNNN adds a file NNNN_name.sql to both directories). The tables,
-- views and columns are the same as on SQLite; integers are BIGINT, reals DOUBLE PRECISION,
-- flags BIGINT 0/1 (as SQLite stores them), JSON is TEXT read with jsonb operators.

CREATE TABLE hosts (
    host_id     TEXT PRIMARY KEY,
    role        TEXT NOT NULL CHECK (role IN ('agent', 'worker')),
    labels      TEXT NOT NULL,
    address     TEXT NOT NULL,
    version     TEXT NOT NULL,
    facts_json  TEXT NOT NULL,
    first_seen  TEXT NOT NULL,
    last_seen   TEXT NOT NULL
);

CREATE TABLE host_facts (
    host_id     TEXT NOT NULL REFERENCES hosts(host_id),
    seen_at     TEXT NOT NULL,
    facts_json  TEXT NOT NULL,
    PRIMARY KEY (host_id, seen_at)
);

CREATE TABLE jobs (
    job_id          TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    spec_toml       TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'building', 'running', 'done', 'failed', 'cancelled')),
    error           TEXT,
    run_order       TEXT NOT NULL,
    db_host_id      TEXT REFERENCES hosts(host_id),
    created_at      TEXT NOT NULL,
    started_at      TEXT,
    finished_at     TEXT,
    seed            BIGINT,
    plan_json       TEXT,
    kind            TEXT NOT NULL DEFAULT 'benchmark' CHECK (kind IN ('benchmark', 'probe')),
    workload        TEXT NOT NULL DEFAULT '',
    headline_metric TEXT NOT NULL DEFAULT '',
    random_seed     BIGINT,
    waiting         TEXT,
    build_progress  TEXT,
    rerun_of        TEXT
);

CREATE TABLE cells (
    job_id            TEXT NOT NULL REFERENCES jobs(job_id),
    cell_index        BIGINT NOT NULL,
    label             TEXT NOT NULL,
    block_size_kb     BIGINT NOT NULL,
    wal_block_size_kb BIGINT NOT NULL,
    clients           BIGINT NOT NULL,
    is_baseline       BIGINT NOT NULL CHECK (is_baseline IN (0, 1)),
    dims_json         TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (job_id, cell_index)
);

CREATE TABLE builds (
    job_id            TEXT NOT NULL REFERENCES jobs(job_id),
    host_id           TEXT NOT NULL REFERENCES hosts(host_id),
    build_key         TEXT NOT NULL,
    block_size_kb     BIGINT NOT NULL,
    wal_block_size_kb BIGINT NOT NULL,
    source_sha256     TEXT NOT NULL,
    pg_version        TEXT NOT NULL,
    reused            BIGINT NOT NULL CHECK (reused IN (0, 1)),
    build_seconds     DOUBLE PRECISION NOT NULL,
    recorded_at       TEXT NOT NULL,
    PRIMARY KEY (job_id, build_key)
);

CREATE TABLE runs (
    run_id                TEXT PRIMARY KEY,
    job_id                TEXT NOT NULL REFERENCES jobs(job_id),
    cell_index            BIGINT NOT NULL,
    repetition            BIGINT NOT NULL,
    sequence              BIGINT NOT NULL,
    attempt               BIGINT NOT NULL DEFAULT 0,
    state                 TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled', 'lost')),
    stage                 TEXT NOT NULL,
    error                 TEXT,
    log_tail              TEXT,
    db_host_id            TEXT REFERENCES hosts(host_id),
    worker_host_id        TEXT REFERENCES hosts(host_id),
    build_key             TEXT,
    build_reused          BIGINT,
    server_version        TEXT,
    block_size            BIGINT,
    wal_block_size        BIGINT,
    server_address        TEXT,
    started_at            TEXT,
    finished_at           TEXT,
    suspect_json          TEXT,
    os_cache_dropped      BIGINT,
    checkpoint_before     BIGINT,
    wal_dir               TEXT,
    postmaster_start_time TEXT,
    server_restarted      BIGINT,
    stats_start_at        TEXT,
    stats_end_at          TEXT,
    fpi_source            TEXT,
    host_warnings         TEXT,
    UNIQUE (job_id, sequence),
    FOREIGN KEY (job_id, cell_index) REFERENCES cells(job_id, cell_index)
);

CREATE TABLE results (
    run_id              TEXT PRIMARY KEY REFERENCES runs(run_id),
    transactions        BIGINT NOT NULL,
    failures            BIGINT NOT NULL,
    tps                 DOUBLE PRECISION NOT NULL,
    tps_incl_conn       DOUBLE PRECISION NOT NULL,
    latency_avg_ms      DOUBLE PRECISION NOT NULL,
    latency_stddev_ms   DOUBLE PRECISION NOT NULL,
    latency_p50_ms      DOUBLE PRECISION NOT NULL,
    latency_p90_ms      DOUBLE PRECISION NOT NULL,
    latency_p99_ms      DOUBLE PRECISION NOT NULL,
    latency_p999_ms     DOUBLE PRECISION NOT NULL,
    latency_max_ms      DOUBLE PRECISION NOT NULL,
    connection_time_ms  DOUBLE PRECISION NOT NULL,
    measured_seconds    DOUBLE PRECISION NOT NULL,
    client_cpu_user_s   DOUBLE PRECISION NOT NULL,
    client_cpu_system_s DOUBLE PRECISION NOT NULL,
    latency_histogram   BYTEA,
    retries             BIGINT NOT NULL DEFAULT 0,
    skipped             BIGINT NOT NULL DEFAULT 0,
    late                BIGINT NOT NULL DEFAULT 0,
    random_seed         BIGINT,
    schedule_lag_avg_ms DOUBLE PRECISION,
    schedule_lag_max_ms DOUBLE PRECISION
);

CREATE TABLE run_samples (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    second          BIGINT NOT NULL,
    transactions    BIGINT NOT NULL,
    latency_avg_ms  DOUBLE PRECISION NOT NULL,
    failures        BIGINT NOT NULL,
    PRIMARY KEY (run_id, second)
);

CREATE TABLE run_settings (
    run_id   TEXT NOT NULL REFERENCES runs(run_id),
    name     TEXT NOT NULL,
    setting  TEXT NOT NULL,
    unit     TEXT NOT NULL,
    source   TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
);

CREATE INDEX runs_job ON runs(job_id, sequence);

CREATE TABLE result_shares (
    run_id              TEXT NOT NULL REFERENCES runs(run_id),
    worker_host_id      TEXT NOT NULL,
    clients             BIGINT NOT NULL,
    transactions        BIGINT NOT NULL,
    failures            BIGINT NOT NULL,
    tps                 DOUBLE PRECISION NOT NULL,
    latency_avg_ms      DOUBLE PRECISION NOT NULL,
    latency_p99_ms      DOUBLE PRECISION NOT NULL,
    client_cpu_user_s   DOUBLE PRECISION NOT NULL,
    client_cpu_system_s DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, worker_host_id)
);

CREATE TABLE run_stats (
    run_id  TEXT NOT NULL REFERENCES runs(run_id),
    name    TEXT NOT NULL,
    delta   DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, name)
);

CREATE TABLE probe_results (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    job_id          TEXT NOT NULL REFERENCES jobs(job_id),
    host_id         TEXT NOT NULL,
    target          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    chunk_bytes     BIGINT NOT NULL,
    mb_per_s        DOUBLE PRECISION NOT NULL,
    user_cpu_s      DOUBLE PRECISION NOT NULL,
    system_cpu_s    DOUBLE PRECISION NOT NULL,
    latency_avg_us  DOUBLE PRECISION NOT NULL,
    latency_p99_us  DOUBLE PRECISION NOT NULL,
    cache_dropped   BIGINT NOT NULL,
    bytes           BIGINT NOT NULL,
    device          TEXT NOT NULL,
    filesystem      TEXT NOT NULL,
    PRIMARY KEY (run_id, mode, chunk_bytes)
);

CREATE TABLE run_metrics (
    run_id           TEXT NOT NULL REFERENCES runs(run_id),
    name             TEXT NOT NULL,
    value            DOUBLE PRECISION NOT NULL,
    unit             TEXT NOT NULL,
    higher_is_better BIGINT NOT NULL CHECK (higher_is_better IN (0, 1)),
    position         BIGINT NOT NULL,
    PRIMARY KEY (run_id, name)
);

CREATE TABLE job_scripts (
    job_id  TEXT NOT NULL REFERENCES jobs(job_id),
    role    TEXT NOT NULL CHECK (role IN ('script', 'init-sql')),
    name    TEXT NOT NULL,
    sha256  TEXT NOT NULL,
    bytes   BIGINT NOT NULL,
    text    TEXT NOT NULL,
    PRIMARY KEY (job_id, role, name)
);

CREATE TABLE run_statements (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    script_index    BIGINT NOT NULL,
    script          TEXT NOT NULL,
    position        BIGINT NOT NULL,
    command         TEXT NOT NULL,
    count           BIGINT NOT NULL,
    latency_avg_ms  DOUBLE PRECISION NOT NULL,
    failures        BIGINT NOT NULL,
    PRIMARY KEY (run_id, script_index, position)
);

CREATE TABLE host_credentials (
    host_id      TEXT PRIMARY KEY CHECK (length(host_id) BETWEEN 1 AND 128),
    role         TEXT NOT NULL CHECK (role IN ('agent', 'worker')),
    token_sha256 TEXT NOT NULL UNIQUE CHECK (length(token_sha256) = 64),
    enrolled_at  TEXT NOT NULL,
    revoked_at   TEXT
);

CREATE TABLE job_hosts (
    job_id  TEXT NOT NULL REFERENCES jobs(job_id),
    slot    BIGINT NOT NULL CHECK (slot >= 0),
    host_id TEXT NOT NULL,
    PRIMARY KEY (job_id, slot),
    UNIQUE (job_id, host_id)
);

-- `round(x, digits)` on a double, as SQLite has it, so the README's queries run unchanged.
CREATE FUNCTION round(double precision, integer) RETURNS double precision
    AS 'SELECT round($1::numeric, $2)::double precision'
    LANGUAGE SQL IMMUTABLE STRICT;

-- The views, as SQLite's 0003/0005/0008 define them (see there for what each row means).
-- Only SQLite's json_* calls differ: jsonb operators read the same paths here.

CREATE VIEW measured_v AS
SELECT r.run_id, r.job_id, r.cell_index,
       CASE
         WHEN r.suspect_json IS NULL OR trim(r.suspect_json) IN ('', 'null') THEN 0
         WHEN r.suspect_json ~ '^\s*\[\s*\]\s*$' THEN 0
         ELSE 1
       END::bigint AS suspect
FROM runs r
JOIN results res ON res.run_id = r.run_id
WHERE r.state = 'done';

CREATE VIEW results_v AS
SELECT j.job_id, j.name AS job_name, c.cell_index, c.label AS cell,
       c.block_size_kb, c.wal_block_size_kb, c.clients, c.is_baseline, c.dims_json,
       r.run_id, r.repetition, r.sequence, r.attempt, r.started_at,
       r.block_size, r.wal_block_size, r.server_version, r.build_key, r.db_host_id, r.worker_host_id,
       r.suspect_json, m.suspect,
       CASE WHEN m.suspect = 0
        OR coalesce(j.plan_json::jsonb #>> '{Benchmark,spec,analysis,exclude_suspect}', 'false')
             IN ('false', '0')
        OR (SELECT count(*) FROM measured_v m2
            WHERE m2.job_id = m.job_id AND m2.cell_index = m.cell_index
              AND m2.suspect = 0) < 2 THEN 1 ELSE 0 END::bigint AS in_stats,
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
       coalesce(sum(v.suspect), 0)::bigint AS runs_suspect,
       coalesce(sum(v.in_stats), 0)::bigint AS n,
       max(v.block_size) AS block_size, max(v.wal_block_size) AS wal_block_size,
       avg(CASE WHEN v.in_stats = 1 THEN v.tps END) AS tps_mean,
       CASE WHEN sum(v.in_stats) > 1 THEN
         (sum(CASE WHEN v.in_stats = 1 THEN v.tps * v.tps END)
          - sum(CASE WHEN v.in_stats = 1 THEN v.tps END) * sum(CASE WHEN v.in_stats = 1 THEN v.tps END)
            / sum(v.in_stats)::double precision)
         / (sum(v.in_stats)::double precision - 1)
       END AS tps_variance,
       avg(v.tps) AS tps_mean_all,
       avg(CASE WHEN v.in_stats = 1 THEN v.latency_avg_ms END) AS latency_avg_ms_mean,
       avg(CASE WHEN v.in_stats = 1 THEN v.latency_p99_ms END) AS latency_p99_ms_mean
FROM cells c
JOIN jobs j ON j.job_id = c.job_id
LEFT JOIN results_v v ON v.job_id = c.job_id AND v.cell_index = c.cell_index
GROUP BY c.job_id, c.cell_index, j.job_id;

CREATE VIEW comparison_v AS
SELECT c.job_id, c.job_name, c.cell_index, c.cell, c.block_size_kb, c.wal_block_size_kb,
       c.clients, c.dims_json, c.is_baseline, c.block_size, c.wal_block_size, c.n, c.runs_suspect,
       j.plan_json::jsonb #>> ARRAY['Benchmark', 'plan', 'cells', c.cell_index::text, 'compared_on']
         AS compared_on,
       c.tps_mean, b.cell AS baseline_cell, b.n AS baseline_n, b.tps_mean AS baseline_tps_mean,
       100.0 * (c.tps_mean - b.tps_mean) / b.tps_mean AS tps_pct_change,
       c.latency_p99_ms_mean, b.latency_p99_ms_mean AS baseline_latency_p99_ms_mean,
       100.0 * (c.latency_p99_ms_mean - b.latency_p99_ms_mean) / b.latency_p99_ms_mean
         AS latency_p99_pct_change
FROM cells_v c
JOIN jobs j ON j.job_id = c.job_id
LEFT JOIN cells_v b ON b.job_id = c.job_id AND CASE
    WHEN j.plan_json::jsonb #>> '{Benchmark,plan,cells,0,memory_reference}' IS NOT NULL
      THEN b.cell_index = (j.plan_json::jsonb
             #>> ARRAY['Benchmark', 'plan', 'cells', c.cell_index::text, 'baseline_cell'])::bigint
    ELSE b.is_baseline = 1 AND b.clients = c.clients
      AND (b.dims_json::jsonb - 'source') = (c.dims_json::jsonb - 'source')
  END;

CREATE VIEW run_metrics_v AS
SELECT j.job_id, j.name AS job_name, c.cell_index, c.label AS cell,
       c.block_size_kb, c.wal_block_size_kb, c.clients, c.is_baseline,
       r.run_id, r.repetition, r.sequence, r.block_size, r.wal_block_size,
       m.name AS metric, m.value, m.unit, m.higher_is_better, m.position
FROM run_metrics m
JOIN runs r ON r.run_id = m.run_id
JOIN cells c ON c.job_id = r.job_id AND c.cell_index = r.cell_index
JOIN jobs j ON j.job_id = r.job_id
WHERE r.state = 'done';
