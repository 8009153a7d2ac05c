-- The job as parsed once at submit: its validated spec and expansion (cells, runs, builds,
-- order, seed) as JSON, which the scheduler, the listings and the reports read instead of the
-- spec text; and what listings show without reading it.
ALTER TABLE jobs ADD COLUMN plan_json TEXT;
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'benchmark' CHECK (kind IN ('benchmark', 'probe'));
ALTER TABLE jobs ADD COLUMN workload TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN headline_metric TEXT NOT NULL DEFAULT '';
