-- What a run's cache reset after the data load did (layout.cold), when the agent took the
-- statistics at the start and the end of the measured window, and where the window's
-- full-page-image bytes came from (pg_waldump or pg_stat_wal).
ALTER TABLE runs ADD COLUMN server_restarted INTEGER;
ALTER TABLE runs ADD COLUMN stats_start_at TEXT;
ALTER TABLE runs ADD COLUMN stats_end_at TEXT;
ALTER TABLE runs ADD COLUMN fpi_source TEXT;
