-- Every change that can alter a token check (internal/store Authenticate)
-- notifies channel npugrade_auth at commit: a token revoked or moved, a
-- user changed or removed, an address's failed sign-ins counted or
-- forgotten. Each server LISTENs (internal/pgnotify) and forgets the
-- token checks it keeps in memory, so a revocation counts at once on
-- every server while a token's requests skip the lookup's round trip.
-- One notification per statement; identical ones in a transaction arrive
-- once. A token's last_used_at, written once a minute, notifies nobody.
CREATE FUNCTION auth_notify() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('npugrade_auth', TG_TABLE_NAME); RETURN NULL; END $$;
CREATE TRIGGER tokens_auth_notify AFTER UPDATE OF hash, user_id, revoked_at OR DELETE OR TRUNCATE ON tokens FOR EACH STATEMENT EXECUTE FUNCTION auth_notify();
CREATE TRIGGER users_auth_notify AFTER UPDATE OR DELETE OR TRUNCATE ON users FOR EACH STATEMENT EXECUTE FUNCTION auth_notify();
CREATE TRIGGER auth_failures_auth_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON auth_failures FOR EACH STATEMENT EXECUTE FUNCTION auth_notify();
