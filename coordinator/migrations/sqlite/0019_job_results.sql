-- A finished job's results of one metric (`metric` as asked: empty for the job's headline),
-- as the coordinator binary `analysis` computed them: the JSON of
-- blocklab_measure::job::QueryResults. A coordinator's first read of a finished job after a
-- start reads them instead of computing them from every run again. A binary of other code
-- has another `analysis`: it ignores these rows and stores its own. Derived data: `catalog
-- copy` leaves it out.
CREATE TABLE job_results (
    job_id       TEXT NOT NULL REFERENCES jobs(job_id),
    metric       TEXT NOT NULL,
    analysis     TEXT NOT NULL,
    results_json TEXT NOT NULL,
    PRIMARY KEY (job_id, metric, analysis)
);
