-- Per-host credentials: each enrolled host has its own token, bound to its host id and role.
-- Only the token's sha256 is kept (hex); the token itself is printed once at enrollment.
-- A revoked credential keeps its row (revoked_at set) so the host id stays known as enrolled.
CREATE TABLE host_credentials (
    host_id      TEXT PRIMARY KEY CHECK (length(host_id) BETWEEN 1 AND 128),
    role         TEXT NOT NULL CHECK (role IN ('agent', 'worker')),
    token_sha256 TEXT NOT NULL UNIQUE CHECK (length(token_sha256) = 64),
    enrolled_at  TEXT NOT NULL,
    revoked_at   TEXT
);
