-- The score before any late penalty (the counted points of the cells):
-- the gradebook export shows it beside the penalised score. A regrade
-- item keeps its new one until it is applied. Existing scores are taken
-- as unpenalised.
ALTER TABLE submissions ADD COLUMN raw_score REAL NOT NULL DEFAULT 0;
UPDATE submissions SET raw_score = score;
ALTER TABLE regrade_items ADD COLUMN new_raw_score REAL NOT NULL DEFAULT 0;
UPDATE regrade_items SET new_raw_score = new_score;
