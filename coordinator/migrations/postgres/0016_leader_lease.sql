-- The leader lease of coordinators that share one catalog (PostgreSQL): a single row naming
-- the leader, its epoch and when its lease expires (unix milliseconds, by the database's
-- clock). Every new leader takes the next epoch, and every write of a leader checks, in its
-- own transaction, that the row still holds its epoch (fencing). Runtime state: `catalog
-- copy` does not copy it.
CREATE TABLE leader_lease (
    id          BIGINT PRIMARY KEY CHECK (id = 1),
    holder_id   TEXT NOT NULL,
    address     TEXT NOT NULL,
    epoch       BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    acquired_at TEXT NOT NULL
);
