-- Device-code sign-in (RFC 8628's shape): a client (the notebook client,
-- npugrade login) asks for a grant, the learner approves its short user
-- code in a signed-in browser, and the client's poll receives a token.
-- A grant's state lives here, not in a server's memory, so that any
-- server of a fleet answers any poll. Only the device code's SHA-256 is
-- stored; the user code is short-lived and shown on screen anyway.
-- polls counts the client's polls, so that two servers answering polls
-- at once agree on which was too early (slow_down).
--
-- A token's scope is '' (its user's role) or 'learner' (a staff member's
-- token that acts as a learner: what a device sign-in issues); label
-- names the client it was issued to, for the learner's list of devices.
ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN label TEXT NOT NULL DEFAULT '';
CREATE TABLE device_grants (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    device_hash     TEXT NOT NULL UNIQUE,
    user_code       TEXT NOT NULL UNIQUE,
    client_name     TEXT NOT NULL DEFAULT '',
    client_addr     TEXT NOT NULL DEFAULT '',
    status          TEXT NOT NULL DEFAULT 'pending',
    user_id         INTEGER REFERENCES users(id) ON DELETE CASCADE,
    interval_s      INTEGER NOT NULL,
    polls           INTEGER NOT NULL DEFAULT 0,
    last_polled_at  DATETIME,
    created_at      DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL
);
CREATE INDEX device_grants_addr ON device_grants(client_addr, created_at);
CREATE INDEX device_grants_expires ON device_grants(expires_at);
