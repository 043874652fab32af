-- Warm spares (issue 15): the pre-started kernels a runner keeps ready
-- (per slot and in all), how many waited for a job when it last reported,
-- and the memory those held, in bytes.
ALTER TABLE runners ADD COLUMN warm_spares_per_slot INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runners ADD COLUMN warm_spares INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runners ADD COLUMN warm_spares_ready INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runners ADD COLUMN warm_spare_memory BIGINT NOT NULL DEFAULT 0;
