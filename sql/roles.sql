-- secrag's login roles, for servers where the migrating user (DATABASE_URL) may not create roles.
-- Run once per server as an administrator, before `secrag db migrate`:
--
--   psql "postgresql://admin@db.example/secrag" -v reader_password="$READER_PW" \
--        -v querylog_password="$QUERYLOG_PW" -f roles.sql
--
-- then give the API its own credentials (it never needs the owner's):
--   SECRAG_READER_DATABASE_URL=postgresql://secrag_reader:$READER_PW@db.example/secrag
--   SECRAG_QUERYLOG_DATABASE_URL=postgresql://secrag_querylog:$QUERYLOG_PW@db.example/secrag  (query log only)
-- `secrag db migrate` grants secrag_reader SELECT on the served columns (sql/reader_grants.sql, the one list)
-- and secrag_querylog INSERT on query_log.
-- The webhook receiver's role (`secrag hooks`, INSERT on pokes and their retention) gets a password when one
-- is given:
--   -v hooks_password="$HOOKS_PW"   then SECRAG_HOOKS_DATABASE_URL=postgresql://secrag_hooks:$HOOKS_PW@db.example/secrag
SELECT format('CREATE ROLE %I', name)
FROM (VALUES ('secrag_reader'), ('secrag_querylog')) AS roles(name)
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = roles.name)
\gexec
ALTER ROLE secrag_reader LOGIN PASSWORD :'reader_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE secrag_reader SET statement_timeout = '2s';
ALTER ROLE secrag_reader SET default_transaction_read_only = on;
ALTER ROLE secrag_querylog LOGIN PASSWORD :'querylog_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE secrag_querylog SET statement_timeout = '2s';
\if :{?hooks_password}
SELECT 'CREATE ROLE secrag_hooks' WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_hooks')
\gexec
ALTER ROLE secrag_hooks LOGIN PASSWORD :'hooks_password'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER ROLE secrag_hooks SET statement_timeout = '2s';
\endif
