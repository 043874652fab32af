-- A cohort's own grading policy for an exercise it offers, beside its
-- deadline: the late-penalty steps (JSON, as exercise.json's
-- late_penalty) and the cap on graded submissions. NULL: the
-- exercise's own.
ALTER TABLE cohort_exercises ADD COLUMN late_penalty TEXT;
ALTER TABLE cohort_exercises ADD COLUMN max_submissions INTEGER;
