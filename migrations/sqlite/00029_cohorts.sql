-- Cohorts: a course instance (torchair-2027-spring) groups learners,
-- staff, the exercises offered and their deadlines. Staff roles are per
-- cohort: an instructor sees the submissions of the cohorts they teach.
CREATE TABLE cohorts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    slug       TEXT NOT NULL UNIQUE,
    title      TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL
);
CREATE TABLE cohort_members (
    cohort_id  INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('learner', 'instructor')),
    created_at DATETIME NOT NULL,
    PRIMARY KEY (cohort_id, user_id)
);
CREATE INDEX cohort_members_user ON cohort_members (user_id, created_at);
-- An exercise offered in a cohort, with the cohort's own deadline (NULL:
-- the exercise's). No row: offered with the exercise's defaults.
CREATE TABLE cohort_exercises (
    cohort_id   INTEGER NOT NULL REFERENCES cohorts(id) ON DELETE CASCADE,
    exercise_id TEXT NOT NULL,
    deadline    DATETIME,
    PRIMARY KEY (cohort_id, exercise_id)
);
-- Existing data is one default cohort (id 1, the first row of a fresh
-- table) with every learner and instructor in it.
INSERT INTO cohorts (slug, title, created_at) VALUES ('default', 'Default', CURRENT_TIMESTAMP);
INSERT INTO cohort_members (cohort_id, user_id, role, created_at)
    SELECT c.id, u.id, u.role, CURRENT_TIMESTAMP FROM users u, cohorts c
    WHERE c.slug = 'default' AND u.role IN ('learner', 'instructor');
ALTER TABLE submissions ADD COLUMN cohort_id INTEGER NOT NULL DEFAULT 1;
-- (SQLite cannot add a column with a foreign key and a non-NULL
-- default; the store only ever writes a cohort it has read.)
CREATE INDEX submissions_cohort ON submissions (cohort_id, created_at);
