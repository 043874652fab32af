-- Per-learner extensions (issue 18): one learner's deadline (and, when
-- given, late-penalty schedule) for one exercise, without touching the
-- exercise. A revoked extension stays on record; at most one is active
-- per learner and exercise.
CREATE TABLE extensions (
    id            BIGSERIAL PRIMARY KEY,
    exercise_id   TEXT NOT NULL,
    user_id       BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    deadline      TIMESTAMPTZ NOT NULL,
    late_penalty  TEXT,
    granted_by    TEXT NOT NULL,
    granted_at    TIMESTAMPTZ NOT NULL,
    revoked_by    TEXT,
    revoked_at    TIMESTAMPTZ
);
CREATE UNIQUE INDEX extensions_active ON extensions(exercise_id, user_id) WHERE revoked_at IS NULL;
CREATE INDEX extensions_user ON extensions(user_id);
