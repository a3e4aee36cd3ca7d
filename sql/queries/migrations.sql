-- Bookkeeping of the migration runner (the one table that exists before migrations do).

-- name: create_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version      integer PRIMARY KEY,
    name         text NOT NULL,
    checksum     text NOT NULL,
    applied_at   timestamptz NOT NULL DEFAULT now(),
    execution_ms integer NOT NULL
)

-- name: lock
SELECT pg_advisory_lock(%(key)s)

-- name: unlock
SELECT pg_advisory_unlock(%(key)s)

-- name: applied
SELECT version, name, checksum FROM schema_migrations ORDER BY version

-- name: record
INSERT INTO schema_migrations (version, name, checksum, execution_ms)
VALUES (%(version)s, %(name)s, %(checksum)s, %(execution_ms)s)

-- name: table_exists
SELECT to_regclass('schema_migrations') IS NOT NULL

-- name: current_version
SELECT coalesce(max(version), 0) FROM schema_migrations
