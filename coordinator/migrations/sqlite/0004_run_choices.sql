-- What each run's cache-control choices actually did, and where its WAL lived.
ALTER TABLE runs ADD COLUMN os_cache_dropped INTEGER;
ALTER TABLE runs ADD COLUMN checkpoint_before INTEGER;
ALTER TABLE runs ADD COLUMN wal_dir TEXT;
ALTER TABLE runs ADD COLUMN postmaster_start_time TEXT;
