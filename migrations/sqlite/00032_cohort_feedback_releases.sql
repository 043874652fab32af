-- A release of an exercise's feedback to everyone in one cohort: what an
-- instructor's "release to everyone" means (they teach that cohort, not
-- the server). A release with user_id 0 in feedback_releases stays the
-- release to every cohort (an admin's).
CREATE TABLE cohort_feedback_releases (
    exercise_id     TEXT NOT NULL,
    cohort_id       INTEGER NOT NULL,
    released_by_id  INTEGER,
    released_by     TEXT NOT NULL,
    released_at     DATETIME NOT NULL,
    PRIMARY KEY (exercise_id, cohort_id)
);
