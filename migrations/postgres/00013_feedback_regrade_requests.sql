-- Issue 18: feedback release and regrade requests.

-- Feedback of an exercise whose policy is feedback: "on_release" is shown
-- to a learner once released to everyone (user_id 0) or to them.
CREATE TABLE feedback_releases (
    id              BIGSERIAL PRIMARY KEY,
    exercise_id     TEXT NOT NULL,
    user_id         BIGINT NOT NULL DEFAULT 0,
    released_by_id  BIGINT,
    released_by     TEXT NOT NULL,
    released_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (exercise_id, user_id)
);

-- A learner's question about one graded cell of their submission, and the
-- instructor's answer; an override of the cell's points is a
-- manual_grades row (kind 'override') with the old score in score_history.
CREATE TABLE regrade_requests (
    id               BIGSERIAL PRIMARY KEY,
    submission_id    TEXT NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    cell_id          TEXT NOT NULL,
    user_id          BIGINT NOT NULL REFERENCES users(id),
    message          TEXT NOT NULL,
    state            TEXT NOT NULL,
    answer           TEXT NOT NULL DEFAULT '',
    answered_by_id   BIGINT,
    answered_by      TEXT NOT NULL DEFAULT '',
    answered_at      TIMESTAMPTZ,
    override_points  DOUBLE PRECISION,
    override_reason  TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMPTZ NOT NULL
);
CREATE INDEX regrade_requests_state ON regrade_requests(state, created_at);
CREATE INDEX regrade_requests_submission ON regrade_requests(submission_id, id);
