-- Blob data compressed with lz4 instead of pglz (issue 15): a 135 KB
-- notebook is compressed on every accepted upload, and lz4 does it for a
-- fraction of pglz's CPU at about the same size. Rows already stored keep
-- pglz (both are read transparently). Postgres before 14, or built
-- without lz4, keeps pglz: the statement fails there and is skipped.
DO $$ BEGIN EXECUTE 'ALTER TABLE blobs ALTER COLUMN data SET COMPRESSION lz4'; EXCEPTION WHEN feature_not_supported OR syntax_error OR invalid_parameter_value THEN RAISE NOTICE 'blobs.data keeps pglz compression: %', SQLERRM; END $$;
