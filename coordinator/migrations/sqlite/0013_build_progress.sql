-- The latest progress of the build a job is making (JSON of blocklab_spec::BuildProgress:
-- its page sizes, step, make percentage and ETA); NULL while the job builds nothing.
ALTER TABLE jobs ADD COLUMN build_progress TEXT;
