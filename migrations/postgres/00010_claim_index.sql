-- Claims (internal/store/jobs.go ClaimJob) pick the highest-priority,
-- oldest queued job in one statement. This partial index holds only the
-- queued rows, in claim order, so a claim reads its head instead of
-- walking past finished jobs; the reaper's scan of leased rows by expiry
-- gets the same treatment.
CREATE INDEX jobs_queued_order ON jobs (priority DESC, id) WHERE state = 'queued';
CREATE INDEX jobs_leased_expiry ON jobs (lease_expires_at) WHERE state = 'leased';

-- Every job that becomes queued (enqueued, retried, released) notifies
-- channel npugrade_jobs, delivered at commit to every server process
-- LISTENing (internal/pgnotify), so a long poll on any server wakes at
-- once. The payload is "<not_before as unix seconds> <requires JSON>":
-- a server wakes only claimers that can run the job, and a retried job's
-- claimers when its backoff ends. Identical payloads in one transaction
-- arrive once (a bulk insert is one wake-up; each claim that succeeds
-- wakes the next claimer, see internal/queue).
CREATE FUNCTION jobs_notify_queued() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('npugrade_jobs', extract(epoch FROM NEW.not_before)::text || ' ' || NEW.requires); RETURN NULL; END $$;
CREATE TRIGGER jobs_queued_insert AFTER INSERT ON jobs FOR EACH ROW WHEN (NEW.state = 'queued') EXECUTE FUNCTION jobs_notify_queued();
CREATE TRIGGER jobs_queued_update AFTER UPDATE OF state ON jobs FOR EACH ROW WHEN (NEW.state = 'queued' AND OLD.state <> 'queued') EXECUTE FUNCTION jobs_notify_queued();
