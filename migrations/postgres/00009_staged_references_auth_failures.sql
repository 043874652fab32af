-- Issue 14 (c14). Two tables:
--
-- staged_references: reference outputs recorded by a reference job on a
-- runner. A runner is not trusted with what every later submission is
-- graded against, so its recording waits here until an instructor
-- accepts it (then it is copied into exercise_references, which grading
-- reads) or rejects it (kept for the record, never used). Rows already in
-- exercise_references stay accepted.
CREATE TABLE staged_references (
    id               BIGSERIAL PRIMARY KEY,
    exercise_id      TEXT NOT NULL,
    profile          TEXT NOT NULL,
    answer_sha256    TEXT NOT NULL,
    cells            TEXT NOT NULL,
    job_id           BIGINT REFERENCES jobs(id) ON DELETE SET NULL,
    runner_id        TEXT NOT NULL DEFAULT '',
    env_fingerprint  TEXT NOT NULL DEFAULT '',
    recorded_at      TIMESTAMPTZ NOT NULL,
    state            TEXT NOT NULL DEFAULT 'staged',
    decided_by       TEXT NOT NULL DEFAULT '',
    decided_at       TIMESTAMPTZ,
    note             TEXT NOT NULL DEFAULT ''
);
CREATE INDEX staged_references_state ON staged_references(state, recorded_at);
CREATE INDEX staged_references_exercise ON staged_references(exercise_id, profile);

-- auth_failures: failed authentications per client address and window
-- (internal/authguard). Shared through the database so that every server
-- on it throttles a guessing address together. An address over the limit
-- is refused before any write, so a guesser causes at most the limit's
-- worth of writes per window.
CREATE TABLE auth_failures (
    addr          TEXT PRIMARY KEY,
    window_start  TIMESTAMPTZ NOT NULL,
    failures      INTEGER NOT NULL
);
CREATE INDEX auth_failures_window ON auth_failures(window_start);
