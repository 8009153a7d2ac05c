-- The job a job reruns (`blocklab rerun`): same spec text and files; NULL for a job submitted
-- as such.
ALTER TABLE jobs ADD COLUMN rerun_of TEXT;
