-- 0016: one-time documents (`secrag ingest add FILE --name NAME`): the CLI stores the file here, and the
-- `ingested/documents` asset of a Dagster run publishes each as its own access-controlled source
-- `ingested_<name>`, wherever runs execute (pipeline/assets/ingested.py). `secrag ingest remove` marks a
-- row; the next run unpublishes its documents and deletes the row.
CREATE TABLE ingested_documents (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_]{0,47}$'),
    filename   text NOT NULL CHECK (filename <> '' AND filename !~ '[/\\]'),
    size       integer NOT NULL CHECK (size > 0),
    sha256     text NOT NULL,
    content    bytea NOT NULL,               -- zlib-compressed
    tenant     text,
    acl_users  text[] NOT NULL DEFAULT '{}',
    acl_groups text[] NOT NULL DEFAULT '{}',
    added_by   text NOT NULL,
    added_at   timestamptz NOT NULL DEFAULT now(),
    removed_at timestamptz
);
ALTER TABLE ingested_documents ALTER COLUMN content SET STORAGE EXTERNAL;
-- Private files: the API serves their published documents through the access checks, never this table.
REVOKE SELECT ON ingested_documents FROM secrag_reader;
