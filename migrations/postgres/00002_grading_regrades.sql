-- Issue 3: staged regrades, and the scores a submission had before one.

-- A regrade of one exercise's graded submissions against its current
-- version: staged (computing), ready (preview complete), applied, discarded.
CREATE TABLE regrades (
    id                BIGSERIAL PRIMARY KEY,
    exercise_id       TEXT NOT NULL,
    mode              TEXT NOT NULL,
    state             TEXT NOT NULL,
    exercise_version  TEXT NOT NULL,
    grader_version    TEXT NOT NULL,
    created_by        BIGINT REFERENCES users(id),
    created_at        TIMESTAMPTZ NOT NULL,
    decided_at        TIMESTAMPTZ
);
CREATE INDEX regrades_exercise ON regrades(exercise_id, created_at);

-- One affected submission of a regrade: its score now and the score the
-- regrade would give it (cells as a JSON array of cell results).
CREATE TABLE regrade_items (
    id                BIGSERIAL PRIMARY KEY,
    regrade_id        BIGINT NOT NULL REFERENCES regrades(id) ON DELETE CASCADE,
    submission_id     TEXT NOT NULL REFERENCES submissions(id),
    user_id           BIGINT NOT NULL REFERENCES users(id),
    state             TEXT NOT NULL,
    job_id            BIGINT REFERENCES jobs(id),
    old_score         DOUBLE PRECISION NOT NULL,
    old_max_score     DOUBLE PRECISION NOT NULL,
    old_version       TEXT NOT NULL,
    new_score         DOUBLE PRECISION NOT NULL DEFAULT 0,
    new_max_score     DOUBLE PRECISION NOT NULL DEFAULT 0,
    message           TEXT NOT NULL DEFAULT '',
    profile           TEXT NOT NULL DEFAULT '',
    env_fingerprint   TEXT NOT NULL DEFAULT '',
    executed_sha256   TEXT REFERENCES blobs(sha256),
    cells             TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX regrade_items_regrade ON regrade_items(regrade_id, submission_id);
CREATE INDEX regrade_items_job ON regrade_items(job_id);

-- Every score a submission had before it was replaced (by an applied
-- regrade): scores of old exercise versions stay on record.
CREATE TABLE score_history (
    id                BIGSERIAL PRIMARY KEY,
    submission_id     TEXT NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    regrade_id        BIGINT REFERENCES regrades(id),
    exercise_version  TEXT NOT NULL,
    grader_version    TEXT NOT NULL,
    profile           TEXT NOT NULL,
    env_fingerprint   TEXT NOT NULL,
    score             DOUBLE PRECISION NOT NULL,
    max_score         DOUBLE PRECISION NOT NULL,
    message           TEXT NOT NULL DEFAULT '',
    cells             TEXT NOT NULL DEFAULT '[]',
    graded_at         TIMESTAMPTZ,
    recorded_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX score_history_submission ON score_history(submission_id, recorded_at);
