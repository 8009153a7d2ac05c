-- The database hosts a job runs on, one per slot (placement.db_hosts; slot k runs the
-- repetitions r with r mod db_hosts = k). Slot 0 is also jobs.db_host_id.
CREATE TABLE job_hosts (
    job_id  TEXT NOT NULL REFERENCES jobs(job_id),
    slot    INTEGER NOT NULL CHECK (slot >= 0),
    host_id TEXT NOT NULL,
    PRIMARY KEY (job_id, slot),
    UNIQUE (job_id, host_id)
);
