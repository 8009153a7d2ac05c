-- The user's own workload through the fleet.
-- The job's one random seed (pgbench workloads): the spec's, or chosen at submit. Every run
-- of the job seeds its clients from it, so a rerun with the same seed draws the same values.
ALTER TABLE jobs ADD COLUMN random_seed INTEGER;

-- The files a job's spec names, as the submission sent them (every run gets these bytes):
-- workload scripts and the [workload.init] SQL.
CREATE TABLE job_scripts (
    job_id  TEXT NOT NULL REFERENCES jobs(job_id),
    role    TEXT NOT NULL CHECK (role IN ('script', 'init-sql')),
    name    TEXT NOT NULL,
    sha256  TEXT NOT NULL,
    bytes   INTEGER NOT NULL,
    text    TEXT NOT NULL,
    PRIMARY KEY (job_id, role, name)
);

-- Schedule lag behind the rate (NULL for runs stored before it was kept).
ALTER TABLE results ADD COLUMN schedule_lag_avg_ms REAL;
ALTER TABLE results ADD COLUMN schedule_lag_max_ms REAL;

-- Per statement of each script of a run (pgbench -r), merged over the run's workers.
CREATE TABLE run_statements (
    run_id          TEXT NOT NULL REFERENCES runs(run_id),
    script_index    INTEGER NOT NULL,
    script          TEXT NOT NULL,
    position        INTEGER NOT NULL,
    command         TEXT NOT NULL,
    count           INTEGER NOT NULL,
    latency_avg_ms  REAL NOT NULL,
    failures        INTEGER NOT NULL,
    PRIMARY KEY (run_id, script_index, position)
);
