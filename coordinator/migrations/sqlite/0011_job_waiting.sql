-- Why a job waits right now (for its database host, for client workers), as the scheduler
-- last said; NULL while it does not wait.
ALTER TABLE jobs ADD COLUMN waiting TEXT;
