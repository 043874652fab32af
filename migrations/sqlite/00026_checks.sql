-- A check is graded like a submission (same environment, sandbox and
-- probes) but is not an attempt: it never counts toward max_submissions,
-- the gradebook, the dashboard, regrades or events that follow a score.
-- The row is a submission's, so the whole grading path is shared; kind
-- keeps them apart in every read of a learner's record.
ALTER TABLE submissions ADD COLUMN kind TEXT NOT NULL DEFAULT 'submission';
-- A check's upload is throttled by the check limit alone: it is not one
-- of the uploads the learner's upload limit counts.
ALTER TABLE upload_attempts ADD COLUMN kind TEXT NOT NULL DEFAULT 'submission';
