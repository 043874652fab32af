-- What a runner token may be (internal/store/runners.go RunnerScope):
-- `npugrade user add NAME --role runner --profiles npu-a2,cpu --labels
-- site=lab1`. A registration reporting another profile, or other values
-- of these labels, is refused. profiles is a comma-separated list, labels
-- a JSON object.
CREATE TABLE runner_scopes (
    user_id   INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
    profiles  TEXT NOT NULL,
    labels    TEXT NOT NULL
);
