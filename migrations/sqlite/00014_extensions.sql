-- Per-learner extensions (issue 18): one learner's deadline (and, when
-- given, late-penalty schedule) for one exercise, without touching the
-- exercise. A revoked extension stays on record; at most one is active
-- per learner and exercise.
CREATE TABLE extensions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    exercise_id   TEXT NOT NULL,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    deadline      DATETIME NOT NULL,
    late_penalty  TEXT,
    granted_by    TEXT NOT NULL,
    granted_at    DATETIME NOT NULL,
    revoked_by    TEXT,
    revoked_at    DATETIME
);
CREATE UNIQUE INDEX extensions_active ON extensions(exercise_id, user_id) WHERE revoked_at IS NULL;
CREATE INDEX extensions_user ON extensions(user_id);
