-- 0017: the reader's rights become an allowlist. 0001 made SELECT on every new table a default privilege,
-- so each private table had to be revoked by hand (0005, 0012, 0016). No more: new tables get no right,
-- and from this version on `secrag db migrate` applies sql/reader_grants.sql after the migrations, which
-- revokes everything and grants secrag_reader exactly the columns it lists (secrag/reader_grants.py).
-- The current grants stay until then, so the API keeps serving while this runs.
ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE SELECT ON TABLES FROM secrag_reader;
