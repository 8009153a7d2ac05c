-- Measurements of workload kinds beyond pgbench's columns, one row per run and metric:
-- NOTPM and per-transaction percentiles (tpcc), seconds per query and tuples per second
-- (as3ap), seconds per maintenance step (maintenance). Written with the run's result.
CREATE TABLE run_metrics (
    run_id           TEXT NOT NULL REFERENCES runs(run_id),
    name             TEXT NOT NULL,
    value            REAL NOT NULL,
    unit             TEXT NOT NULL,
    higher_is_better INTEGER NOT NULL CHECK (higher_is_better IN (0, 1)),
    position         INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);

-- One row per measured run and metric, with its cell and the proof of what was measured.
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
