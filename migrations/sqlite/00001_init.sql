CREATE TABLE users (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    role        TEXT NOT NULL,
    created_at  DATETIME NOT NULL
);

CREATE TABLE tokens (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash          TEXT NOT NULL UNIQUE,
    prefix        TEXT NOT NULL,
    created_at    DATETIME NOT NULL,
    revoked_at    DATETIME,
    last_used_at  DATETIME
);
CREATE INDEX tokens_user ON tokens(user_id);

CREATE TABLE blobs (
    sha256      TEXT PRIMARY KEY,
    size        INTEGER NOT NULL,
    data        BLOB NOT NULL,
    created_at  DATETIME NOT NULL
);

CREATE TABLE submissions (
    id                TEXT PRIMARY KEY,
    user_id           INTEGER NOT NULL REFERENCES users(id),
    exercise_id       TEXT NOT NULL,
    exercise_version  TEXT NOT NULL,
    notebook_sha256   TEXT NOT NULL REFERENCES blobs(sha256),
    executed_sha256   TEXT REFERENCES blobs(sha256),
    status            TEXT NOT NULL,
    score             REAL NOT NULL DEFAULT 0,
    max_score         REAL NOT NULL DEFAULT 0,
    message           TEXT NOT NULL DEFAULT '',
    profile           TEXT NOT NULL DEFAULT '',
    runner_id         TEXT NOT NULL DEFAULT '',
    env_fingerprint   TEXT NOT NULL DEFAULT '',
    grader_version    TEXT NOT NULL DEFAULT '',
    idempotency_key   TEXT,
    created_at        DATETIME NOT NULL,
    started_at        DATETIME,
    graded_at         DATETIME
);
CREATE UNIQUE INDEX submissions_idempotency ON submissions(user_id, idempotency_key);
CREATE INDEX submissions_user_exercise ON submissions(user_id, exercise_id, created_at);
CREATE INDEX submissions_created ON submissions(created_at);

CREATE TABLE jobs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    submission_id     TEXT REFERENCES submissions(id),
    kind              TEXT NOT NULL,
    exercise_id       TEXT NOT NULL,
    state             TEXT NOT NULL,
    requires          TEXT NOT NULL DEFAULT '{}',
    priority          INTEGER NOT NULL DEFAULT 0,
    attempt           INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL,
    payload_sha256    TEXT NOT NULL REFERENCES blobs(sha256),
    lease_token       TEXT NOT NULL DEFAULT '',
    runner_id         TEXT NOT NULL DEFAULT '',
    lease_expires_at  DATETIME,
    not_before        DATETIME NOT NULL,
    last_error        TEXT NOT NULL DEFAULT '',
    created_at        DATETIME NOT NULL,
    updated_at        DATETIME NOT NULL
);
CREATE INDEX jobs_claim ON jobs(state, priority DESC, id);
CREATE INDEX jobs_lease ON jobs(state, lease_expires_at);
CREATE INDEX jobs_submission ON jobs(submission_id);

CREATE TABLE cell_results (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    submission_id  TEXT NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    cell_id        TEXT NOT NULL,
    verdict        TEXT NOT NULL,
    points         REAL NOT NULL,
    max_points     REAL NOT NULL,
    counted        BOOLEAN NOT NULL,
    message        TEXT NOT NULL DEFAULT '',
    observed       TEXT NOT NULL DEFAULT '',
    expected       TEXT NOT NULL DEFAULT '',
    diff           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX cell_results_submission ON cell_results(submission_id, position);

CREATE TABLE runners (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    user_id     INTEGER REFERENCES users(id),
    labels      TEXT NOT NULL DEFAULT '{}',
    profile     TEXT NOT NULL DEFAULT '',
    report      TEXT NOT NULL DEFAULT '{}',
    verdict     TEXT NOT NULL DEFAULT '',
    draining    BOOLEAN NOT NULL DEFAULT 0,
    last_seen   DATETIME NOT NULL,
    created_at  DATETIME NOT NULL
);
