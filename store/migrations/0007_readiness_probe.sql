-- /readyz proves the store writable, not only answering: it rewrites this
-- one row (at most every few seconds per replica), so a full disk or a
-- read-only database takes the replica out of rotation before callers'
-- writes fail.
CREATE TABLE readiness_probe (
    id        INTEGER PRIMARY KEY,
    probed_at TIMESTAMPTZ NOT NULL
);
INSERT INTO readiness_probe (id, probed_at) VALUES (1, CURRENT_TIMESTAMP);
