-- Issue 18: the dashboard's grading latency counts every scored
-- submission, including those graded for their automatic part that wait
-- for manual grading (internal/store/stats.go writes the same literals).
DROP INDEX IF EXISTS submissions_graded;
CREATE INDEX submissions_scored ON submissions(graded_at) WHERE status IN ('graded', 'needs-manual') AND graded_at IS NOT NULL;
