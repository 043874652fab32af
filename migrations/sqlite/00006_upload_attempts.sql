-- Every upload a learner makes, accepted or refused, for the rate limits
-- (internal/store/uploads.go). Rejected uploads count too: a flood of bad
-- notebooks is throttled like a flood of good ones. Shared through the
-- database, so every server on it enforces the same limit.
CREATE TABLE upload_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    exercise_id TEXT NOT NULL,
    created_at  DATETIME NOT NULL
);
CREATE INDEX upload_attempts_user ON upload_attempts(user_id, created_at);
