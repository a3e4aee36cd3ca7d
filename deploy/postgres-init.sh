#!/bin/sh
# First start of the compose PostgreSQL (docker-entrypoint-initdb.d): secrag's login roles with the
# passwords of deploy/.env (sql/roles.sql) and Dagster's own database beside the store.
set -eu
# The webhook receiver's role only when its password is set (the `hooks` profile).
set -- -v reader_password="$SECRAG_READER_PASSWORD" -v querylog_password="$SECRAG_QUERYLOG_PASSWORD"
if [ -n "${SECRAG_HOOKS_PASSWORD:-}" ]; then
    set -- "$@" -v hooks_password="$SECRAG_HOOKS_PASSWORD"
fi
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" "$@" -f /secrag/roles.sql
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -c "CREATE DATABASE secrag_dagster OWNER \"$POSTGRES_USER\""
