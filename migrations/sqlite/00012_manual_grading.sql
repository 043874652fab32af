-- Issue 18: manual grading with rubrics (internal/grade/manual.go).

-- Every manual grading decision, append-only: the latest row per
-- (submission, cell) is the one in force. kind is 'rubric' (a person
-- applied rubric items, an adjustment and a comment to a manual cell),
-- 'override' (an instructor set a cell's points, e.g. answering a regrade
-- request) or 'rubric-change' (the rubric changed and the same items were
-- re-applied). items is a JSON array of rubric item ids.
CREATE TABLE manual_grades (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    submission_id   TEXT NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    cell_id         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    items           TEXT NOT NULL DEFAULT '[]',
    adjustment      REAL NOT NULL DEFAULT 0,
    comment         TEXT NOT NULL DEFAULT '',
    points          REAL NOT NULL,
    max_points      REAL NOT NULL,
    grader_id       INTEGER,
    grader          TEXT NOT NULL,
    graded_at       DATETIME NOT NULL
);
CREATE INDEX manual_grades_submission ON manual_grades(submission_id, cell_id, id);

-- The rubric of each manual cell as it was seen, by digest: a new digest
-- is a rubric change, re-applied to every graded submission.
CREATE TABLE rubrics (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    exercise_id  TEXT NOT NULL,
    cell_id      TEXT NOT NULL,
    digest       TEXT NOT NULL,
    items        TEXT NOT NULL,
    recorded_at  DATETIME NOT NULL,
    UNIQUE (exercise_id, cell_id, digest)
);

-- Why an earlier score was replaced ('' for an applied regrade, which
-- names itself by regrade_id).
ALTER TABLE score_history ADD COLUMN reason TEXT NOT NULL DEFAULT '';
