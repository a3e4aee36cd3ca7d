#!/bin/sh
# First start of the compose PostgreSQL (docker-entrypoint-initdb.d): secrag's login roles with the
# passwords of deploy/.env (sql/roles.sql) and Dagster's own database beside the store.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v reader_password="$SECRAG_READER_PASSWORD" -v querylog_password="$SECRAG_QUERYLOG_PASSWORD" \
    -f /secrag/roles.sql
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -c "CREATE DATABASE secrag_dagster OWNER \"$POSTGRES_USER\""
