-- Each run's per-second samples downsampled when the run is stored: at most 300 buckets of
-- consecutive seconds (sums, minima and maxima; the encoding is described in
-- coordinator/src/catalog/series.rs), read by the job page instead of every raw sample. Runs
-- stored before have none: the job page reads their raw samples.
CREATE TABLE run_series (
    run_id       TEXT PRIMARY KEY REFERENCES runs(run_id),
    last_second  INTEGER NOT NULL,
    point_count  INTEGER NOT NULL,
    points       BLOB NOT NULL
);
