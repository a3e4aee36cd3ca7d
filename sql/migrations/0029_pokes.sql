-- 0029: pokes from upstream webhooks (`secrag hooks`). A poke says only "look at this source now": the
-- source's sensor reads the unseen ones on its next tick, probes the upstream itself and marks them seen.
-- The receiver logs in as secrag_hooks, which may INSERT pokes and nothing else (no SELECT: a replay is
-- told by the unique delivery id, ON CONFLICT DO NOTHING).
CREATE TABLE IF NOT EXISTS pokes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source text NOT NULL,
    delivery_id text NOT NULL UNIQUE CHECK (length(delivery_id) BETWEEN 1 AND 200),
    event text NOT NULL CHECK (length(event) BETWEEN 1 AND 100),
    received_at timestamptz NOT NULL DEFAULT now(),
    seen_at timestamptz
);
CREATE INDEX IF NOT EXISTS pokes_unseen_idx ON pokes (source) WHERE seen_at IS NULL;

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_hooks') THEN
        CREATE ROLE secrag_hooks NOLOGIN;
    END IF;
    ALTER ROLE secrag_hooks LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    ALTER ROLE secrag_hooks SET statement_timeout = '2s';
EXCEPTION WHEN insufficient_privilege THEN
    RAISE WARNING 'cannot create or alter the role secrag_hooks as %; run sql/roles.sql as an administrator',
        current_user;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_hooks') THEN
        GRANT USAGE ON SCHEMA public TO secrag_hooks;
        GRANT INSERT (source, delivery_id, event) ON pokes TO secrag_hooks;
    END IF;
END
$$;
