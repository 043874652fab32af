-- A regrade also covers the exercise's failed submissions (grading
-- failed, e.g. on stale reference outputs): a reexecute regrade queues
-- them again, a recompare cannot score them (they have no run) and counts
-- them in skipped_failed, so the instructor sees they need a reexecute.
ALTER TABLE regrades ADD COLUMN skipped_failed INTEGER NOT NULL DEFAULT 0;
-- The submission's status when the regrade was staged: failed means it
-- had no score (old_score and old_max_score are 0).
ALTER TABLE regrade_items ADD COLUMN old_status TEXT NOT NULL DEFAULT '';
-- The status the replaced score had: failed means there was none, and the
-- submission is not counted as one of the learner's attempts
-- (max_submissions), as it was not while it had failed.
ALTER TABLE score_history ADD COLUMN prior_status TEXT NOT NULL DEFAULT '';
