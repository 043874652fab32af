CREATE TABLE users (
    id          BIGSERIAL PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    role        TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE tokens (
    id            BIGSERIAL PRIMARY KEY,
    user_id       BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hash          TEXT NOT NULL UNIQUE,
    prefix        TEXT NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    revoked_at    TIMESTAMPTZ,
    last_used_at  TIMESTAMPTZ
);
CREATE INDEX tokens_user ON tokens(user_id);

CREATE TABLE blobs (
    sha256      TEXT PRIMARY KEY,
    size        BIGINT NOT NULL,
    data        BYTEA NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE submissions (
    id                TEXT PRIMARY KEY,
    user_id           BIGINT NOT NULL REFERENCES users(id),
    exercise_id       TEXT NOT NULL,
    exercise_version  TEXT NOT NULL,
    notebook_sha256   TEXT NOT NULL REFERENCES blobs(sha256),
    executed_sha256   TEXT REFERENCES blobs(sha256),
    status            TEXT NOT NULL,
    score             DOUBLE PRECISION NOT NULL DEFAULT 0,
    max_score         DOUBLE PRECISION NOT NULL DEFAULT 0,
    message           TEXT NOT NULL DEFAULT '',
    profile           TEXT NOT NULL DEFAULT '',
    runner_id         TEXT NOT NULL DEFAULT '',
    env_fingerprint   TEXT NOT NULL DEFAULT '',
    grader_version    TEXT NOT NULL DEFAULT '',
    idempotency_key   TEXT,
    created_at        TIMESTAMPTZ NOT NULL,
    started_at        TIMESTAMPTZ,
    graded_at         TIMESTAMPTZ
);
CREATE UNIQUE INDEX submissions_idempotency ON submissions(user_id, idempotency_key);
CREATE INDEX submissions_user_exercise ON submissions(user_id, exercise_id, created_at);
CREATE INDEX submissions_created ON submissions(created_at);

CREATE TABLE jobs (
    id                BIGSERIAL PRIMARY KEY,
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
    lease_expires_at  TIMESTAMPTZ,
    not_before        TIMESTAMPTZ NOT NULL,
    last_error        TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX jobs_claim ON jobs(state, priority DESC, id);
CREATE INDEX jobs_lease ON jobs(state, lease_expires_at);
CREATE INDEX jobs_submission ON jobs(submission_id);

CREATE TABLE cell_results (
    id             BIGSERIAL PRIMARY KEY,
    submission_id  TEXT NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,
    cell_id        TEXT NOT NULL,
    verdict        TEXT NOT NULL,
    points         DOUBLE PRECISION NOT NULL,
    max_points     DOUBLE PRECISION NOT NULL,
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
    user_id     BIGINT REFERENCES users(id),
    labels      TEXT NOT NULL DEFAULT '{}',
    profile     TEXT NOT NULL DEFAULT '',
    report      TEXT NOT NULL DEFAULT '{}',
    verdict     TEXT NOT NULL DEFAULT '',
    draining    BOOLEAN NOT NULL DEFAULT FALSE,
    last_seen   TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
