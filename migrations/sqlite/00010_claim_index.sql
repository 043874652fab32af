-- Claims (internal/store/jobs.go ClaimJob) pick the highest-priority,
-- oldest queued job in one statement. This partial index holds only the
-- queued rows, in claim order, so a claim reads its head instead of
-- walking past finished jobs; the reaper's scan of leased rows by expiry
-- gets the same treatment.
CREATE INDEX jobs_queued_order ON jobs (priority DESC, id) WHERE state = 'queued';
CREATE INDEX jobs_leased_expiry ON jobs (lease_expires_at) WHERE state = 'leased';
