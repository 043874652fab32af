-- A failed authentication counted for an address notifies npugrade_auth
-- with that address ('addr ' and the address), once per row, so that
-- servers forget the token checks they keep for that address alone
-- (internal/store authCache). Under 00021 any failure anywhere made every
-- server forget every check: a guesser's failures, one a second, cost
-- every request on every server its lookup again. Pruning (DELETE) and
-- TRUNCATE still notify the table's name, which forgets every check.
DROP TRIGGER auth_failures_auth_notify ON auth_failures;
CREATE FUNCTION auth_notify_addr() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('npugrade_auth', 'addr ' || NEW.addr); RETURN NULL; END $$;
CREATE TRIGGER auth_failures_addr_notify AFTER INSERT OR UPDATE ON auth_failures FOR EACH ROW EXECUTE FUNCTION auth_notify_addr();
CREATE TRIGGER auth_failures_auth_notify AFTER DELETE OR TRUNCATE ON auth_failures FOR EACH STATEMENT EXECUTE FUNCTION auth_notify();
