-- Issue 5: remote runners and reference runs through the queue.

-- How many slots a runner registered with (shown by GET /api/v1/runners).
ALTER TABLE runners ADD COLUMN slots INTEGER NOT NULL DEFAULT 0;
CREATE INDEX runners_last_seen ON runners(last_seen);

-- The runner profile a job was asked for: reference jobs record the answer's
-- outputs for exactly this profile ('' for grading jobs, which take any
-- runner that satisfies requires).
ALTER TABLE jobs ADD COLUMN profile TEXT NOT NULL DEFAULT '';

-- Reference outputs recorded by a reference job on a runner. answers/ is
-- read-only on a server, so these live in the database; a file reference
-- (answers/<id>/references/<profile>.json) wins over a row here.
CREATE TABLE exercise_references (
    exercise_id      TEXT NOT NULL,
    profile          TEXT NOT NULL,
    answer_sha256    TEXT NOT NULL,
    cells            TEXT NOT NULL,
    job_id           INTEGER REFERENCES jobs(id),
    runner_id        TEXT NOT NULL DEFAULT '',
    env_fingerprint  TEXT NOT NULL DEFAULT '',
    recorded_at      DATETIME NOT NULL,
    PRIMARY KEY (exercise_id, profile)
);
