-- Fair share between learners: a learner's job records, as its turn, how
-- many of that learner's jobs were queued or running when it was
-- enqueued, and claims take turn 0 of every learner before turn 1 of
-- any. Ten uploads of one learner then delay another learner's by one
-- job, not ten. user_id is the learner whose upload a grade job grades;
-- the partial index serves the count at enqueue.
ALTER TABLE jobs ADD COLUMN user_id BIGINT;
ALTER TABLE jobs ADD COLUMN turn INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET user_id = (SELECT s.user_id FROM submissions s WHERE s.id = jobs.submission_id)
  WHERE kind = 'grade' AND submission_id IS NOT NULL;
DROP INDEX jobs_queued_order;
CREATE INDEX jobs_queued_order ON jobs (priority DESC, turn, id) WHERE state = 'queued';
CREATE INDEX jobs_active_by_user ON jobs (user_id) WHERE state IN ('queued', 'leased');
