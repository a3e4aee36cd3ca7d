-- 0005: least privilege for the API. It used to connect as the owner and SET ROLE secrag_reader,
-- which the session could undo (RESET ROLE). Now it logs in as secrag_reader, which holds SELECT
-- on the served tables and nothing else; the opt-in query log writes as secrag_querylog, which may
-- only INSERT into query_log. Roles are cluster-wide: create them once, grant per database.
-- Making a role LOGIN needs CREATEROLE; a migrating user without it is warned, not failed, and an
-- administrator runs sql/roles.sql (see the README's "Database roles").
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_querylog') THEN
        CREATE ROLE secrag_querylog NOLOGIN;
    END IF;
    ALTER ROLE secrag_reader LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    ALTER ROLE secrag_querylog LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    ALTER ROLE secrag_querylog SET statement_timeout = '2s';
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'cannot create or alter the roles secrag_reader and secrag_querylog as %; '
        'run sql/roles.sql as an administrator', current_user;
END
$$;

-- The reader sees what the API serves (and the schema version, for /readyz), not who asked what.
REVOKE SELECT ON query_log FROM secrag_reader;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_querylog') THEN
        GRANT USAGE ON SCHEMA public TO secrag_querylog;
        GRANT INSERT ON query_log TO secrag_querylog;
    END IF;
END
$$;
