-- Indexes behind the instructor dashboard and /metrics (issue 15): with
-- hundreds of thousands of submissions, each statistic reads an index
-- range, never the whole table. The predicates are written as literals in
-- the queries (internal/store/stats.go), so the planner can match them.

-- Grading latency over the newest graded submissions.
CREATE INDEX submissions_graded ON submissions(graded_at) WHERE status = 'graded' AND graded_at IS NOT NULL;
-- The queue's depth: only queued and leased jobs, however many finished.
CREATE INDEX jobs_pending ON jobs(state) WHERE state IN ('queued', 'leased');
-- The queue history: submissions started in the window, and those still waiting.
CREATE INDEX submissions_started ON submissions(started_at, created_at);
CREATE INDEX submissions_waiting ON submissions(created_at, started_at) WHERE status = 'queued';
-- Newest-first listings (the dashboard's recent submissions, cursor paging).
CREATE INDEX submissions_created_id ON submissions(created_at, id);
