-- blocklab catalog, version 1.

CREATE TABLE hosts (
    host_id     TEXT PRIMARY KEY,
    role        TEXT NOT NULL CHECK (role IN ('agent', 'worker')),
    labels      TEXT NOT NULL,            -- JSON array
    address     TEXT NOT NULL,
    version     TEXT NOT NULL,
    facts_json  TEXT NOT NULL,
    first_seen  TEXT NOT NULL,
    last_seen   TEXT NOT NULL
);

-- Every distinct set of facts a host reported, so a result can be tied to the hardware it ran on.
CREATE TABLE host_facts (
    host_id     TEXT NOT NULL REFERENCES hosts(host_id),
    seen_at     TEXT NOT NULL,
    facts_json  TEXT NOT NULL,
    PRIMARY KEY (host_id, seen_at)
);

CREATE TABLE jobs (
    job_id      TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    spec_toml   TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('queued', 'building', 'running', 'done', 'failed', 'cancelled')),
    error       TEXT,
    run_order   TEXT NOT NULL,
    db_host_id  TEXT REFERENCES hosts(host_id),
    created_at  TEXT NOT NULL,
    started_at  TEXT,
    finished_at TEXT
);

CREATE TABLE cells (
    job_id            TEXT NOT NULL REFERENCES jobs(job_id),
    cell_index        INTEGER NOT NULL,
    label             TEXT NOT NULL,
    block_size_kb     INTEGER NOT NULL,
    wal_block_size_kb INTEGER NOT NULL,
    clients           INTEGER NOT NULL,
    is_baseline       INTEGER NOT NULL CHECK (is_baseline IN (0, 1)),
    PRIMARY KEY (job_id, cell_index)
);

-- Builds an agent made or found in its cache, per job.
CREATE TABLE builds (
    job_id            TEXT NOT NULL REFERENCES jobs(job_id),
    host_id           TEXT NOT NULL REFERENCES hosts(host_id),
    build_key         TEXT NOT NULL,
    block_size_kb     INTEGER NOT NULL,
    wal_block_size_kb INTEGER NOT NULL,
    source_sha256     TEXT NOT NULL,
    pg_version        TEXT NOT NULL,
    reused            INTEGER NOT NULL CHECK (reused IN (0, 1)),
    build_seconds     REAL NOT NULL,
    recorded_at       TEXT NOT NULL,
    PRIMARY KEY (job_id, build_key)
);

CREATE TABLE runs (
    run_id          TEXT PRIMARY KEY,
    job_id          TEXT NOT NULL REFERENCES jobs(job_id),
    cell_index      INTEGER NOT NULL,
    repetition      INTEGER NOT NULL,
    sequence        INTEGER NOT NULL,
    attempt         INTEGER NOT NULL DEFAULT 0,
    state           TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled', 'lost')),
    stage           TEXT NOT NULL,
    error           TEXT,
    log_tail        TEXT,
    db_host_id      TEXT REFERENCES hosts(host_id),
    worker_host_id  TEXT REFERENCES hosts(host_id),
    build_key       TEXT,
    build_reused    INTEGER,
    server_version  TEXT,
    block_size      INTEGER,               -- SHOW block_size on the live server, bytes
    wal_block_size  INTEGER,               -- SHOW wal_block_size on the live server, bytes
    server_address  TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    UNIQUE (job_id, sequence),
    FOREIGN KEY (job_id, cell_index) REFERENCES cells(job_id, cell_index)
);

-- One row per finished run, written in the same transaction that marks the run done.
CREATE TABLE results (
    run_id              TEXT PRIMARY KEY REFERENCES runs(run_id),
    transactions        INTEGER NOT NULL,
    failures            INTEGER NOT NULL,
    tps                 REAL NOT NULL,      -- without initial connection time
    tps_incl_conn       REAL NOT NULL,      -- including initial connection time
    latency_avg_ms      REAL NOT NULL,
    latency_stddev_ms   REAL NOT NULL,
    latency_p50_ms      REAL NOT NULL,
    latency_p90_ms      REAL NOT NULL,
    latency_p99_ms      REAL NOT NULL,
    latency_p999_ms     REAL NOT NULL,
    latency_max_ms      REAL NOT NULL,
    connection_time_ms  REAL NOT NULL,
    measured_seconds    REAL NOT NULL,
    client_cpu_user_s   REAL NOT NULL,
    client_cpu_system_s REAL NOT NULL,
    latency_histogram   BLOB
);

CREATE TABLE run_samples (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    second          INTEGER NOT NULL,
    transactions    INTEGER NOT NULL,
    latency_avg_ms  REAL NOT NULL,
    failures        INTEGER NOT NULL,
    PRIMARY KEY (run_id, second)
);

-- Effective non-default settings of the live server (pg_settings), per run.
CREATE TABLE run_settings (
    run_id   TEXT NOT NULL REFERENCES runs(run_id),
    name     TEXT NOT NULL,
    setting  TEXT NOT NULL,
    unit     TEXT NOT NULL,
    source   TEXT NOT NULL,
    PRIMARY KEY (run_id, name)
);

CREATE INDEX runs_job ON runs(job_id, sequence);

-- One row per measured run, with its cell and the proof of what was measured.
CREATE VIEW results_v AS
SELECT j.job_id, j.name AS job_name, c.cell_index, c.label AS cell,
       c.block_size_kb, c.wal_block_size_kb, c.clients, c.is_baseline,
       r.run_id, r.repetition, r.sequence, r.attempt,
       r.block_size, r.wal_block_size, r.server_version, r.build_key, r.db_host_id, r.worker_host_id,
       res.transactions, res.failures, res.tps, res.tps_incl_conn,
       res.latency_avg_ms, res.latency_stddev_ms, res.latency_p50_ms, res.latency_p90_ms,
       res.latency_p99_ms, res.latency_p999_ms, res.latency_max_ms,
       res.client_cpu_user_s, res.client_cpu_system_s, r.finished_at
FROM results res
JOIN runs r ON r.run_id = res.run_id
JOIN cells c ON c.job_id = r.job_id AND c.cell_index = r.cell_index
JOIN jobs j ON j.job_id = r.job_id;

-- One row per cell: how many runs finished and the mean tps over them.
CREATE VIEW cells_v AS
SELECT c.job_id, c.cell_index, c.label AS cell, c.block_size_kb, c.wal_block_size_kb,
       c.clients, c.is_baseline,
       (SELECT count(*) FROM runs r WHERE r.job_id = c.job_id AND r.cell_index = c.cell_index) AS runs_total,
       count(v.run_id) AS runs_done,
       max(v.block_size) AS block_size, max(v.wal_block_size) AS wal_block_size,
       avg(v.tps) AS tps_mean, avg(v.latency_avg_ms) AS latency_avg_ms_mean
FROM cells c
LEFT JOIN results_v v ON v.job_id = c.job_id AND v.cell_index = c.cell_index
GROUP BY c.job_id, c.cell_index;
