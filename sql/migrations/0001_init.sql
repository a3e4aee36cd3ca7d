-- 0001: the first schema of the secrag store.
-- Extensions are checked by `secrag db migrate` before this runs, with a clear message when absent.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- Every source secrag serves: online upstreams, user folders, static sets.
CREATE TABLE sources (
    name             text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]*$'),
    kind             text NOT NULL CHECK (kind IN ('online', 'user_folder', 'static')),
    description      text NOT NULL DEFAULT '',
    category         text NOT NULL DEFAULT '',
    upstream         text,
    branch           text,
    tracking         text CHECK (tracking IN ('commit', 'release', 'feed')),
    current_version  text,
    state            text NOT NULL DEFAULT 'new'
                     CHECK (state IN ('new', 'ok', 'refused', 'failed', 'disabled')),
    last_check_at    timestamptz,
    last_seen_version text,
    last_sync_at     timestamptz,
    record_count     integer NOT NULL DEFAULT 0,
    last_error       text,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- One row per attempted version of a source.
CREATE TABLE source_versions (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source            text NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
    version           text NOT NULL,
    started_at        timestamptz NOT NULL DEFAULT now(),
    finished_at       timestamptz,
    records_parsed    integer NOT NULL DEFAULT 0,
    records_inserted  integer NOT NULL DEFAULT 0,
    records_updated   integer NOT NULL DEFAULT 0,
    records_deleted   integer NOT NULL DEFAULT 0,
    records_unchanged integer NOT NULL DEFAULT 0,
    records_skipped   integer NOT NULL DEFAULT 0,
    status            text NOT NULL CHECK (status IN ('running', 'published', 'refused', 'failed')),
    reason            text,
    details           jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX source_versions_source_started_idx ON source_versions (source, started_at DESC);

CREATE TABLE documents (
    doc_id          text PRIMARY KEY,
    source          text NOT NULL REFERENCES sources (name),
    source_version  text NOT NULL,
    title           text NOT NULL,
    url             text,
    body            text NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
    techniques      text[] NOT NULL DEFAULT '{}',
    platforms       text[] NOT NULL DEFAULT '{}',
    tags            text[] NOT NULL DEFAULT '{}',
    content_hash    text NOT NULL,
    tenant          text,
    acl_users       text[] NOT NULL DEFAULT '{}',
    acl_groups      text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT documents_doc_id_prefix CHECK (starts_with(doc_id, source || ':'))
);
CREATE INDEX documents_source_idx ON documents (source);
CREATE INDEX documents_techniques_idx ON documents USING gin (techniques);
CREATE INDEX documents_platforms_idx ON documents USING gin (platforms);
CREATE INDEX documents_tags_idx ON documents USING gin (tags);
CREATE INDEX documents_updated_at_idx ON documents (updated_at);
CREATE INDEX documents_tenant_idx ON documents (tenant) WHERE tenant IS NOT NULL;

-- Searchable pieces of documents. `title` and `identifiers` are copied from the document so that
-- the weighted tsvector can be a stored generated column.
CREATE TABLE chunks (
    chunk_id       text PRIMARY KEY,
    doc_id         text NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    source         text NOT NULL,
    ordinal        integer NOT NULL CHECK (ordinal >= 0),
    title          text NOT NULL,
    text           text NOT NULL,
    enriched_text  text NOT NULL,
    identifiers    text NOT NULL DEFAULT '',
    content_hash   text NOT NULL,
    tsv            tsvector GENERATED ALWAYS AS (
                       setweight(to_tsvector('english'::regconfig, title), 'A')
                       || setweight(to_tsvector('simple'::regconfig, identifiers), 'A')
                       || setweight(to_tsvector('english'::regconfig, enriched_text), 'B')
                   ) STORED,
    CONSTRAINT chunks_chunk_id_shape CHECK (chunk_id = doc_id || '#' || ordinal),
    CONSTRAINT chunks_doc_ordinal_key UNIQUE (doc_id, ordinal)
);
CREATE INDEX chunks_tsv_idx ON chunks USING gin (tsv);
CREATE INDEX chunks_title_trgm_idx ON chunks USING gin (title gin_trgm_ops);
CREATE INDEX chunks_identifiers_trgm_idx ON chunks USING gin (identifiers gin_trgm_ops);
CREATE INDEX chunks_source_idx ON chunks (source);
CREATE INDEX chunks_content_hash_idx ON chunks (content_hash);

-- Embedding models secrag knows; exactly one is active for serving at a time.
CREATE TABLE embedding_models (
    model_id      text PRIMARY KEY,
    dimensions    integer NOT NULL CHECK (dimensions > 0),
    active        boolean NOT NULL DEFAULT false,
    activated_at  timestamptz
);
CREATE UNIQUE INDEX embedding_models_one_active_idx ON embedding_models (active) WHERE active;
INSERT INTO embedding_models (model_id, dimensions, active, activated_at)
VALUES ('all-MiniLM-L6-v2', 384, true, now());

-- Vectors keyed by chunk text hash and model: unchanged text is never embedded twice.
CREATE TABLE embeddings (
    content_hash  text NOT NULL,
    model_id      text NOT NULL REFERENCES embedding_models (model_id),
    vector        vector NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (content_hash, model_id)
);
ALTER TABLE embeddings ALTER COLUMN vector SET STORAGE PLAIN;
-- One HNSW index per model, on the vector cast to that model's dimension.
CREATE INDEX embeddings_minilm_hnsw_idx ON embeddings
    USING hnsw ((vector::vector(384)) vector_cosine_ops)
    WHERE model_id = 'all-MiniLM-L6-v2';

CREATE TABLE mitre_techniques (
    id           text PRIMARY KEY CHECK (id ~ '^T[0-9]{4}(\.[0-9]{3})?$'),
    name         text NOT NULL,
    full_name    text NOT NULL,
    tactics      text[] NOT NULL DEFAULT '{}',
    platforms    text[] NOT NULL DEFAULT '{}',
    parent       text,
    revoked      boolean NOT NULL DEFAULT false,
    deprecated   boolean NOT NULL DEFAULT false,
    replaced_by  text,
    version      text,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Opt-in query log (the serving layer writes nothing unless configured to).
CREATE TABLE query_log (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    logged_at     timestamptz NOT NULL DEFAULT now(),
    endpoint      text NOT NULL,
    query_type    text,
    query_text    text,
    top_score     double precision,
    result_count  integer NOT NULL DEFAULT 0,
    latency_ms    double precision NOT NULL,
    details       jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX query_log_logged_at_idx ON query_log (logged_at);

-- The API's role: read-only, bounded statements. Roles are cluster-wide, so create it once.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_reader') THEN
        CREATE ROLE secrag_reader NOLOGIN;
    END IF;
END
$$;
ALTER ROLE secrag_reader SET statement_timeout = '2s';
ALTER ROLE secrag_reader SET default_transaction_read_only = on;
GRANT USAGE ON SCHEMA public TO secrag_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO secrag_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO secrag_reader;
