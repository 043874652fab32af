-- Issue 16: one grading pipeline and events out of the completion path.

-- The integrity findings of intake (graded cells the learner tampered with
-- or deleted, as JSON), kept with the submission: grading reads them
-- instead of rebuilding the upload again. NULL for submissions made before
-- this migration; those are rebuilt when graded.
ALTER TABLE submissions ADD COLUMN integrity TEXT;

-- A durable outbox of events (graded, failed, regrade applied) written in
-- the transaction that causes them, so that work which must survive a
-- crash (LMS grade passback, webhooks) is never lost between the commit and
-- its delivery. A deliverer marks rows delivered; failed deliveries are
-- retried after not_before.
CREATE TABLE outbox (
    id            BIGSERIAL PRIMARY KEY,
    kind          TEXT NOT NULL,
    subject       TEXT NOT NULL,
    payload       TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL,
    not_before    TIMESTAMPTZ NOT NULL,
    delivered_at  TIMESTAMPTZ
);
CREATE INDEX outbox_pending ON outbox(delivered_at, not_before, id);
