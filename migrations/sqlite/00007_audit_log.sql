-- The audit log: who did what to whom, for the admin page. Actors and
-- subjects are kept by name too, so an entry outlives a deleted user.
-- Numbered 00007: 00005 and 00006 are other helpers' (the runner orders
-- migrations by number and applies any not yet recorded, so a gap is fine).
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          DATETIME NOT NULL,
    actor_id    INTEGER,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    subject     TEXT NOT NULL,
    detail      TEXT NOT NULL
);
CREATE INDEX audit_log_at ON audit_log(at DESC, id DESC);
