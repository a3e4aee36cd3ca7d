CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';

CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;

COMMENT ON EXTENSION vector IS 'vector data type and ivfflat and hnsw access methods';

CREATE FUNCTION public.chunk_vectors_from_chunks() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO chunk_vectors (chunk_id, model_id, content_hash, doc_id, source, tenant, vector)
    SELECT a.chunk_id, e.model_id, a.content_hash, a.doc_id, a.source, d.tenant, e.vector
    FROM added a
    JOIN documents d ON d.doc_id = a.doc_id
    JOIN embeddings e ON e.content_hash = a.content_hash
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION public.chunk_vectors_from_embeddings() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO chunk_vectors (chunk_id, model_id, content_hash, doc_id, source, tenant, vector)
    SELECT c.chunk_id, a.model_id, a.content_hash, c.doc_id, c.source, d.tenant, a.vector
    FROM added a
    JOIN chunks c ON c.content_hash = a.content_hash
    JOIN documents d ON d.doc_id = c.doc_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION public.chunk_vectors_tenant() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE chunk_vectors SET tenant = NEW.tenant WHERE doc_id = NEW.doc_id;
    RETURN NULL;
END $$;

CREATE FUNCTION public.chunk_vectors_vector() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE chunk_vectors SET vector = NEW.vector
    WHERE content_hash = NEW.content_hash AND model_id = NEW.model_id;
    RETURN NULL;
END $$;

CREATE FUNCTION public.document_accesses_kept() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO document_accesses (doc_id, source, tenant, acl_users, acl_groups)
    SELECT DISTINCT w.doc_id, w.source, w.tenant, w.acl_users, w.acl_groups FROM written w
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION public.forget_deliveries(p_hook text, keep interval, keep_count integer) RETURNS integer
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
    WITH gone AS (
        DELETE FROM pokes
        WHERE hook = p_hook
          AND (received_at < now() - keep
               OR id <= (SELECT id FROM pokes WHERE hook = p_hook ORDER BY id DESC OFFSET keep_count LIMIT 1))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;

CREATE FUNCTION public.technique_documents_added() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO technique_documents (technique, doc_id, source, tenant, labels, techniques)
    SELECT DISTINCT t.technique, a.doc_id, a.source, a.tenant, cardinality(a.techniques), a.techniques
    FROM added a CROSS JOIN LATERAL unnest(a.techniques) AS t(technique)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE FUNCTION public.technique_documents_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    DELETE FROM technique_documents td USING changed c WHERE td.doc_id = c.doc_id;
    INSERT INTO technique_documents (technique, doc_id, source, tenant, labels, techniques)
    SELECT DISTINCT t.technique, c.doc_id, c.source, c.tenant, cardinality(c.techniques), c.techniques
    FROM changed c CROSS JOIN LATERAL unnest(c.techniques) AS t(technique)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TABLE public.chunk_vectors (
    chunk_id text NOT NULL,
    model_id text NOT NULL,
    content_hash text NOT NULL,
    doc_id text NOT NULL,
    source text NOT NULL,
    tenant text,
    vector public.vector NOT NULL
);
ALTER TABLE ONLY public.chunk_vectors ALTER COLUMN vector SET STORAGE PLAIN;

CREATE TABLE public.chunks (
    chunk_id text NOT NULL,
    doc_id text NOT NULL,
    source text NOT NULL,
    ordinal integer NOT NULL,
    title text NOT NULL,
    text text NOT NULL,
    enriched_text text NOT NULL,
    identifiers text DEFAULT ''::text NOT NULL,
    content_hash text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (((setweight(to_tsvector('english'::regconfig, title), 'A'::"char") || setweight(to_tsvector('simple'::regconfig, identifiers), 'A'::"char")) || setweight(to_tsvector('english'::regconfig, enriched_text), 'B'::"char"))) STORED,
    char_start integer,
    char_end integer,
    heading text,
    pages integer[],
    CONSTRAINT chunks_char_start_check CHECK ((char_start >= 0)),
    CONSTRAINT chunks_check CHECK ((char_end >= char_start)),
    CONSTRAINT chunks_chunk_id_shape CHECK ((chunk_id = ((doc_id || '#'::text) || ordinal))),
    CONSTRAINT chunks_ordinal_check CHECK ((ordinal >= 0))
);

CREATE TABLE public.document_accesses (
    doc_id text NOT NULL,
    source text NOT NULL,
    tenant text,
    acl_users text[] NOT NULL,
    acl_groups text[] NOT NULL
);

CREATE TABLE public.document_artefacts (
    doc_id text NOT NULL,
    source text NOT NULL,
    kind text NOT NULL,
    field text NOT NULL,
    value text NOT NULL,
    key text NOT NULL,
    folded boolean NOT NULL,
    pattern text,
    CONSTRAINT document_artefacts_key_check CHECK ((key <> ''::text)),
    CONSTRAINT document_artefacts_kind_check CHECK ((kind = ANY (ARRAY['md5'::text, 'sha1'::text, 'sha256'::text, 'authentihash'::text, 'imphash'::text, 'rich_header_hash'::text, 'file_name'::text, 'path'::text])))
);

CREATE TABLE public.document_changes (
    id bigint NOT NULL,
    source text NOT NULL,
    doc_id text NOT NULL,
    title text NOT NULL,
    change text NOT NULL,
    old_version text,
    new_version text NOT NULL,
    version_id bigint NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    tenant text,
    acl_users text[] DEFAULT '{}'::text[] NOT NULL,
    acl_groups text[] DEFAULT '{}'::text[] NOT NULL,
    CONSTRAINT document_changes_change_check CHECK ((change = ANY (ARRAY['added'::text, 'modified'::text, 'removed'::text])))
);

ALTER TABLE public.document_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.document_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.document_raw (
    doc_id text NOT NULL,
    media_type text NOT NULL,
    whole_file boolean NOT NULL,
    size integer NOT NULL,
    raw bytea NOT NULL,
    CONSTRAINT document_raw_size_check CHECK ((size >= 0))
);
ALTER TABLE ONLY public.document_raw ALTER COLUMN raw SET STORAGE EXTERNAL;

CREATE TABLE public.documents (
    doc_id text NOT NULL,
    source text NOT NULL,
    source_version text NOT NULL,
    title text NOT NULL,
    url text,
    body text NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    techniques text[] DEFAULT '{}'::text[] NOT NULL,
    platforms text[] DEFAULT '{}'::text[] NOT NULL,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    content_hash text NOT NULL,
    tenant text,
    acl_users text[] DEFAULT '{}'::text[] NOT NULL,
    acl_groups text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    upstream_path text,
    media_type text,
    CONSTRAINT documents_acl_has_tenant CHECK (((tenant IS NOT NULL) OR ((cardinality(acl_users) = 0) AND (cardinality(acl_groups) = 0)))),
    CONSTRAINT documents_doc_id_prefix CHECK (starts_with(doc_id, (source || ':'::text)))
);

CREATE TABLE public.embedding_models (
    model_id text NOT NULL,
    dimensions integer NOT NULL,
    active boolean DEFAULT false NOT NULL,
    activated_at timestamp with time zone,
    vectors bigint DEFAULT 0 NOT NULL,
    CONSTRAINT embedding_models_dimensions_check CHECK ((dimensions > 0))
);

CREATE TABLE public.embeddings (
    content_hash text NOT NULL,
    model_id text NOT NULL,
    vector public.vector NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE ONLY public.embeddings ALTER COLUMN vector SET STORAGE PLAIN;

CREATE TABLE public.ingested_documents (
    name text NOT NULL,
    filename text NOT NULL,
    size integer NOT NULL,
    sha256 text NOT NULL,
    content bytea NOT NULL,
    tenant text,
    acl_users text[] DEFAULT '{}'::text[] NOT NULL,
    acl_groups text[] DEFAULT '{}'::text[] NOT NULL,
    added_by text NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    removed_at timestamp with time zone,
    CONSTRAINT ingested_documents_acl_has_tenant CHECK (((tenant IS NOT NULL) OR ((cardinality(acl_users) = 0) AND (cardinality(acl_groups) = 0)))),
    CONSTRAINT ingested_documents_filename_check CHECK (((filename <> ''::text) AND (filename !~ '[/\\]'::text))),
    CONSTRAINT ingested_documents_name_check CHECK ((name ~ '^[a-z0-9][a-z0-9_]{0,47}$'::text)),
    CONSTRAINT ingested_documents_size_check CHECK ((size > 0))
);
ALTER TABLE ONLY public.ingested_documents ALTER COLUMN content SET STORAGE EXTERNAL;

CREATE TABLE public.mitre_techniques (
    id text NOT NULL,
    name text NOT NULL,
    full_name text NOT NULL,
    tactics text[] DEFAULT '{}'::text[] NOT NULL,
    platforms text[] DEFAULT '{}'::text[] NOT NULL,
    parent text,
    revoked boolean DEFAULT false NOT NULL,
    deprecated boolean DEFAULT false NOT NULL,
    replaced_by text,
    version text,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    domain text DEFAULT 'enterprise'::text NOT NULL,
    CONSTRAINT mitre_techniques_domain_check CHECK ((domain = ANY (ARRAY['enterprise'::text, 'mobile'::text, 'ics'::text]))),
    CONSTRAINT mitre_techniques_id_check CHECK ((id ~ '^T[0-9]{4}(\.[0-9]{3})?$'::text))
);

CREATE TABLE public.pokes (
    id bigint NOT NULL,
    hook text CONSTRAINT pokes_source_not_null NOT NULL,
    delivery_id text NOT NULL,
    event text NOT NULL,
    received_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pokes_delivery_id_check CHECK (((length(delivery_id) >= 1) AND (length(delivery_id) <= 200))),
    CONSTRAINT pokes_event_check CHECK (((length(event) >= 1) AND (length(event) <= 100))),
    CONSTRAINT pokes_hook_check CHECK (((length(hook) >= 1) AND (length(hook) <= 200)))
);

ALTER TABLE public.pokes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.pokes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.query_log (
    id bigint NOT NULL,
    logged_at timestamp with time zone DEFAULT now() NOT NULL,
    endpoint text NOT NULL,
    query_type text,
    query_text text,
    top_score double precision,
    result_count integer DEFAULT 0 NOT NULL,
    latency_ms double precision NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    attention text[] DEFAULT '{}'::text[] NOT NULL
);

ALTER TABLE public.query_log ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.query_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.schema_migrations (
    version integer NOT NULL,
    name text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    execution_ms integer NOT NULL
);

CREATE TABLE public.source_counts (
    source text NOT NULL,
    documents bigint NOT NULL,
    chunks bigint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE TABLE public.source_model_counts (
    source text NOT NULL,
    model_id text NOT NULL,
    vectors bigint NOT NULL,
    chunks_embedded bigint NOT NULL
);

CREATE TABLE public.source_versions (
    id bigint NOT NULL,
    source text NOT NULL,
    version text,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    records_parsed integer DEFAULT 0 NOT NULL,
    records_inserted integer DEFAULT 0 NOT NULL,
    records_updated integer DEFAULT 0 NOT NULL,
    records_deleted integer DEFAULT 0 NOT NULL,
    records_unchanged integer DEFAULT 0 NOT NULL,
    records_skipped integer DEFAULT 0 NOT NULL,
    status text NOT NULL,
    error_detail text,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    phase text,
    error_class text,
    backend_pid integer,
    backend_start timestamp with time zone,
    error_kind text,
    CONSTRAINT source_versions_error_kind_check CHECK ((error_kind ~ '^[a-z_]{1,40}$'::text)),
    CONSTRAINT source_versions_phase_check CHECK (((phase IS NULL) OR (phase = ANY (ARRAY['probe'::text, 'fetch'::text, 'parse'::text, 'publish'::text])))),
    CONSTRAINT source_versions_status_check CHECK ((status = ANY (ARRAY['running'::text, 'published'::text, 'unchanged'::text, 'refused'::text, 'failed'::text, 'abandoned'::text])))
);

CREATE TABLE public.sources (
    name text NOT NULL,
    kind text NOT NULL,
    description text DEFAULT ''::text NOT NULL,
    category text DEFAULT ''::text NOT NULL,
    upstream text,
    branch text,
    tracking text,
    current_version text,
    last_check_at timestamp with time zone,
    last_seen_version text,
    last_sync_at timestamp with time zone,
    record_count integer DEFAULT 0 NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    poll_interval integer,
    seen_since timestamp with time zone,
    poked_upto bigint,
    CONSTRAINT sources_kind_check CHECK ((kind = ANY (ARRAY['online'::text, 'user_folder'::text, 'static'::text]))),
    CONSTRAINT sources_name_check CHECK ((name ~ '^[a-z0-9][a-z0-9_.-]*$'::text)),
    CONSTRAINT sources_poll_interval_check CHECK ((poll_interval > 0)),
    CONSTRAINT sources_tracking_check CHECK ((tracking = ANY (ARRAY['commit'::text, 'release'::text, 'feed'::text, 'bundled'::text])))
);

CREATE VIEW public.source_status AS
 SELECT s.name,
        CASE
            WHEN (f.status IS NULL) THEN 'new'::text
            WHEN (f.status = ANY (ARRAY['published'::text, 'unchanged'::text])) THEN 'ok'::text
            ELSE f.status
        END AS state,
    f.error_kind,
    f.id AS attempt_id,
    f.status AS attempt_status,
    f.phase AS attempt_phase,
    f.version AS attempt_version,
    f.started_at AS attempt_at,
    f.finished_at AS attempt_finished_at,
    r.started_at AS running_since,
    ( SELECT max(p.finished_at) AS max
           FROM public.source_versions p
          WHERE ((p.source = s.name) AND (p.status = 'published'::text))) AS last_success_at
   FROM ((public.sources s
     LEFT JOIN LATERAL ( SELECT v.id,
            v.status,
            v.phase,
            v.version,
            v.error_kind,
            v.started_at,
            v.finished_at
           FROM public.source_versions v
          WHERE ((v.source = s.name) AND (v.status <> 'running'::text))
          ORDER BY v.id DESC
         LIMIT 1) f ON (true))
     LEFT JOIN LATERAL ( SELECT v.started_at
           FROM public.source_versions v
          WHERE ((v.source = s.name) AND (v.status = 'running'::text))
          ORDER BY v.id DESC
         LIMIT 1) r ON (true));

ALTER TABLE public.source_versions ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.source_versions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.technique_documents (
    technique text NOT NULL,
    doc_id text NOT NULL,
    source text NOT NULL,
    tenant text,
    labels integer NOT NULL,
    techniques text[] NOT NULL
);

CREATE TABLE public.trained_models (
    model_id text NOT NULL,
    served_model text NOT NULL,
    base_model text NOT NULL,
    replaces text,
    attack_version text,
    data_digest text NOT NULL,
    recipe jsonb NOT NULL,
    validation jsonb NOT NULL,
    baseline jsonb NOT NULL,
    passed boolean NOT NULL,
    status text NOT NULL,
    trained_at timestamp with time zone DEFAULT now() NOT NULL,
    promoted_at timestamp with time zone,
    train_seconds double precision,
    CONSTRAINT trained_models_promoted_at CHECK (((status <> 'promoted'::text) OR (promoted_at IS NOT NULL))),
    CONSTRAINT trained_models_status_check CHECK ((status = ANY (ARRAY['candidate'::text, 'promoted'::text, 'retired'::text, 'rejected'::text])))
);

CREATE TABLE public.tuned_value (
    setting text NOT NULL,
    query_type text NOT NULL,
    value double precision NOT NULL,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    audit_id bigint NOT NULL,
    CONSTRAINT tuned_value_setting_check CHECK ((setting = 'score_threshold'::text))
);

CREATE TABLE public.tuning_audit (
    id bigint NOT NULL,
    at timestamp with time zone DEFAULT now() NOT NULL,
    who text NOT NULL,
    action text NOT NULL,
    setting text NOT NULL,
    query_type text NOT NULL,
    old double precision NOT NULL,
    old_tuned boolean NOT NULL,
    new double precision NOT NULL,
    new_tuned boolean NOT NULL,
    reason text NOT NULL,
    rolls_back bigint,
    CONSTRAINT tuning_audit_action_check CHECK ((action = ANY (ARRAY['apply'::text, 'rollback'::text]))),
    CONSTRAINT tuning_audit_reason_check CHECK ((btrim(reason) <> ''::text))
);

ALTER TABLE public.tuning_audit ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.tuning_audit_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY public.chunk_vectors
    ADD CONSTRAINT chunk_vectors_pkey PRIMARY KEY (chunk_id, model_id);

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_doc_ordinal_key UNIQUE (doc_id, ordinal);

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_pkey PRIMARY KEY (chunk_id);

ALTER TABLE ONLY public.document_accesses
    ADD CONSTRAINT document_accesses_key UNIQUE NULLS NOT DISTINCT (doc_id, tenant, acl_users, acl_groups);

ALTER TABLE ONLY public.document_artefacts
    ADD CONSTRAINT document_artefacts_pkey PRIMARY KEY (doc_id, kind, field, key);

ALTER TABLE ONLY public.document_changes
    ADD CONSTRAINT document_changes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.document_raw
    ADD CONSTRAINT document_raw_pkey PRIMARY KEY (doc_id);

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_pkey PRIMARY KEY (doc_id);

ALTER TABLE ONLY public.embedding_models
    ADD CONSTRAINT embedding_models_pkey PRIMARY KEY (model_id);

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_pkey PRIMARY KEY (content_hash, model_id);

ALTER TABLE ONLY public.ingested_documents
    ADD CONSTRAINT ingested_documents_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.mitre_techniques
    ADD CONSTRAINT mitre_techniques_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.pokes
    ADD CONSTRAINT pokes_hook_delivery_id_key UNIQUE (hook, delivery_id);

ALTER TABLE ONLY public.pokes
    ADD CONSTRAINT pokes_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.query_log
    ADD CONSTRAINT query_log_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);

ALTER TABLE ONLY public.source_counts
    ADD CONSTRAINT source_counts_pkey PRIMARY KEY (source);

ALTER TABLE ONLY public.source_model_counts
    ADD CONSTRAINT source_model_counts_pkey PRIMARY KEY (source, model_id);

ALTER TABLE ONLY public.source_versions
    ADD CONSTRAINT source_versions_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sources
    ADD CONSTRAINT sources_pkey PRIMARY KEY (name);

ALTER TABLE ONLY public.technique_documents
    ADD CONSTRAINT technique_documents_pkey PRIMARY KEY (technique, labels, doc_id) INCLUDE (source, tenant, techniques);

ALTER TABLE ONLY public.trained_models
    ADD CONSTRAINT trained_models_pkey PRIMARY KEY (model_id);

ALTER TABLE ONLY public.tuned_value
    ADD CONSTRAINT tuned_value_pkey PRIMARY KEY (setting, query_type);

ALTER TABLE ONLY public.tuning_audit
    ADD CONSTRAINT tuning_audit_pkey PRIMARY KEY (id);

CREATE INDEX chunk_vectors_doc_idx ON public.chunk_vectors USING btree (doc_id);

CREATE INDEX chunk_vectors_embedding_idx ON public.chunk_vectors USING btree (content_hash, model_id);

CREATE INDEX chunk_vectors_model_source_idx ON public.chunk_vectors USING btree (model_id, source);

CREATE INDEX chunks_content_hash_idx ON public.chunks USING btree (content_hash);

CREATE INDEX chunks_first_title_trgm_idx ON public.chunks USING gin (title public.gin_trgm_ops) WHERE (ordinal = 0);

CREATE INDEX chunks_source_idx ON public.chunks USING btree (source);

CREATE INDEX chunks_tsv_idx ON public.chunks USING gin (tsv);

CREATE INDEX document_artefacts_key_idx ON public.document_artefacts USING btree (key, folded);

CREATE INDEX document_artefacts_pattern_idx ON public.document_artefacts USING btree (doc_id) WHERE (pattern IS NOT NULL);

CREATE INDEX document_artefacts_source_idx ON public.document_artefacts USING btree (source);

CREATE INDEX document_changes_changed_at_idx ON public.document_changes USING btree (changed_at);

CREATE INDEX document_changes_source_id_idx ON public.document_changes USING btree (source, id DESC);

CREATE INDEX documents_actor_idx ON public.documents USING btree (((metadata ->> 'actor_id'::text)));

CREATE INDEX documents_platforms_idx ON public.documents USING gin (platforms);

CREATE INDEX documents_source_idx ON public.documents USING btree (source);

CREATE INDEX documents_tags_idx ON public.documents USING gin (tags);

CREATE INDEX documents_techniques_idx ON public.documents USING gin (techniques);

CREATE INDEX documents_tenant_idx ON public.documents USING btree (tenant) WHERE (tenant IS NOT NULL);

CREATE INDEX documents_updated_at_idx ON public.documents USING btree (updated_at);

CREATE UNIQUE INDEX embedding_models_one_active_idx ON public.embedding_models USING btree (active) WHERE active;

CREATE INDEX embeddings_minilm_hnsw_idx ON public.embeddings USING hnsw (((vector)::public.vector(384)) public.vector_cosine_ops) WHERE (model_id = 'all-MiniLM-L6-v2'::text);

CREATE INDEX pokes_hook_id_idx ON public.pokes USING btree (hook, id);

CREATE INDEX query_log_logged_at_idx ON public.query_log USING btree (logged_at);

CREATE INDEX source_versions_running_idx ON public.source_versions USING btree (source) WHERE (status = 'running'::text);

CREATE INDEX source_versions_source_id_idx ON public.source_versions USING btree (source, id DESC);

CREATE INDEX source_versions_source_started_idx ON public.source_versions USING btree (source, started_at DESC);

CREATE INDEX source_versions_unchanged_idx ON public.source_versions USING btree (finished_at) WHERE (status = 'unchanged'::text);

CREATE INDEX technique_documents_doc_idx ON public.technique_documents USING btree (doc_id);

CREATE UNIQUE INDEX trained_models_one_promoted ON public.trained_models USING btree ((true)) WHERE (status = 'promoted'::text);

CREATE STATISTICS public.document_changes_access ON tenant, cardinality(acl_users), cardinality(acl_groups) FROM public.document_changes;

CREATE STATISTICS public.documents_access ON tenant, cardinality(acl_users), cardinality(acl_groups) FROM public.documents;

CREATE TRIGGER chunk_vectors_on_chunks AFTER INSERT ON public.chunks REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.chunk_vectors_from_chunks();

CREATE TRIGGER chunk_vectors_on_embeddings AFTER INSERT ON public.embeddings REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.chunk_vectors_from_embeddings();

CREATE TRIGGER chunk_vectors_on_tenant AFTER UPDATE OF tenant ON public.documents FOR EACH ROW WHEN ((old.tenant IS DISTINCT FROM new.tenant)) EXECUTE FUNCTION public.chunk_vectors_tenant();

CREATE TRIGGER chunk_vectors_on_vector AFTER UPDATE OF vector ON public.embeddings FOR EACH ROW EXECUTE FUNCTION public.chunk_vectors_vector();

CREATE TRIGGER document_accesses_on_insert AFTER INSERT ON public.documents REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION public.document_accesses_kept();

CREATE TRIGGER document_accesses_on_update AFTER UPDATE ON public.documents REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION public.document_accesses_kept();

CREATE TRIGGER technique_documents_on_insert AFTER INSERT ON public.documents REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION public.technique_documents_added();

CREATE TRIGGER technique_documents_on_update AFTER UPDATE ON public.documents REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION public.technique_documents_changed();

ALTER TABLE ONLY public.chunk_vectors
    ADD CONSTRAINT chunk_vectors_chunk_id_fkey FOREIGN KEY (chunk_id) REFERENCES public.chunks(chunk_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.chunk_vectors
    ADD CONSTRAINT chunk_vectors_content_hash_model_id_fkey FOREIGN KEY (content_hash, model_id) REFERENCES public.embeddings(content_hash, model_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.chunks
    ADD CONSTRAINT chunks_doc_id_fkey FOREIGN KEY (doc_id) REFERENCES public.documents(doc_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.document_accesses
    ADD CONSTRAINT document_accesses_source_fkey FOREIGN KEY (source) REFERENCES public.sources(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.document_artefacts
    ADD CONSTRAINT document_artefacts_doc_id_fkey FOREIGN KEY (doc_id) REFERENCES public.documents(doc_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.document_changes
    ADD CONSTRAINT document_changes_source_fkey FOREIGN KEY (source) REFERENCES public.sources(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.document_raw
    ADD CONSTRAINT document_raw_doc_id_fkey FOREIGN KEY (doc_id) REFERENCES public.documents(doc_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.documents
    ADD CONSTRAINT documents_source_fkey FOREIGN KEY (source) REFERENCES public.sources(name);

ALTER TABLE ONLY public.embeddings
    ADD CONSTRAINT embeddings_model_id_fkey FOREIGN KEY (model_id) REFERENCES public.embedding_models(model_id);

ALTER TABLE ONLY public.source_counts
    ADD CONSTRAINT source_counts_source_fkey FOREIGN KEY (source) REFERENCES public.sources(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.source_model_counts
    ADD CONSTRAINT source_model_counts_model_id_fkey FOREIGN KEY (model_id) REFERENCES public.embedding_models(model_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.source_model_counts
    ADD CONSTRAINT source_model_counts_source_fkey FOREIGN KEY (source) REFERENCES public.sources(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.source_versions
    ADD CONSTRAINT source_versions_source_fkey FOREIGN KEY (source) REFERENCES public.sources(name) ON DELETE CASCADE;

ALTER TABLE ONLY public.technique_documents
    ADD CONSTRAINT technique_documents_doc_id_fkey FOREIGN KEY (doc_id) REFERENCES public.documents(doc_id) ON DELETE CASCADE;

GRANT USAGE ON SCHEMA public TO secrag_querylog;
GRANT USAGE ON SCHEMA public TO secrag_hooks;
GRANT USAGE ON SCHEMA public TO secrag_reader;

REVOKE ALL ON FUNCTION public.forget_deliveries(p_hook text, keep interval, keep_count integer) FROM PUBLIC;
GRANT ALL ON FUNCTION public.forget_deliveries(p_hook text, keep interval, keep_count integer) TO secrag_hooks;

GRANT SELECT(chunk_id) ON TABLE public.chunk_vectors TO secrag_reader;

GRANT SELECT(model_id) ON TABLE public.chunk_vectors TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.chunk_vectors TO secrag_reader;

GRANT SELECT(source) ON TABLE public.chunk_vectors TO secrag_reader;

GRANT SELECT(tenant) ON TABLE public.chunk_vectors TO secrag_reader;

GRANT SELECT(vector) ON TABLE public.chunk_vectors TO secrag_reader;

GRANT SELECT(chunk_id) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(source) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(ordinal) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(title) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(text) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(enriched_text) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(identifiers) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(content_hash) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(tsv) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(char_start) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(char_end) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(heading) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(pages) ON TABLE public.chunks TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.document_accesses TO secrag_reader;

GRANT SELECT(tenant) ON TABLE public.document_accesses TO secrag_reader;

GRANT SELECT(acl_users) ON TABLE public.document_accesses TO secrag_reader;

GRANT SELECT(acl_groups) ON TABLE public.document_accesses TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(source) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(kind) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(field) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(value) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(key) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(folded) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(pattern) ON TABLE public.document_artefacts TO secrag_reader;

GRANT SELECT(id) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(source) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(title) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(change) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(old_version) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(new_version) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(changed_at) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(tenant) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(acl_users) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(acl_groups) ON TABLE public.document_changes TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.document_raw TO secrag_reader;

GRANT SELECT(media_type) ON TABLE public.document_raw TO secrag_reader;

GRANT SELECT(whole_file) ON TABLE public.document_raw TO secrag_reader;

GRANT SELECT(size) ON TABLE public.document_raw TO secrag_reader;

GRANT SELECT(raw) ON TABLE public.document_raw TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(source) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(source_version) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(title) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(url) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(body) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(metadata) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(techniques) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(platforms) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(tags) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(tenant) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(acl_users) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(acl_groups) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(created_at) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(updated_at) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(upstream_path) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(media_type) ON TABLE public.documents TO secrag_reader;

GRANT SELECT(model_id) ON TABLE public.embedding_models TO secrag_reader;

GRANT SELECT(dimensions) ON TABLE public.embedding_models TO secrag_reader;

GRANT SELECT(active) ON TABLE public.embedding_models TO secrag_reader;

GRANT SELECT(vectors) ON TABLE public.embedding_models TO secrag_reader;

GRANT SELECT(content_hash) ON TABLE public.embeddings TO secrag_reader;

GRANT SELECT(model_id) ON TABLE public.embeddings TO secrag_reader;

GRANT SELECT(vector) ON TABLE public.embeddings TO secrag_reader;

GRANT SELECT(id) ON TABLE public.mitre_techniques TO secrag_reader;

GRANT SELECT(full_name) ON TABLE public.mitre_techniques TO secrag_reader;

GRANT SELECT(tactics) ON TABLE public.mitre_techniques TO secrag_reader;

GRANT SELECT(revoked) ON TABLE public.mitre_techniques TO secrag_reader;

GRANT SELECT(deprecated) ON TABLE public.mitre_techniques TO secrag_reader;

GRANT SELECT(domain) ON TABLE public.mitre_techniques TO secrag_reader;

GRANT INSERT(hook) ON TABLE public.pokes TO secrag_hooks;

GRANT INSERT(delivery_id) ON TABLE public.pokes TO secrag_hooks;

GRANT INSERT(event) ON TABLE public.pokes TO secrag_hooks;

GRANT INSERT ON TABLE public.query_log TO secrag_querylog;

GRANT SELECT(version) ON TABLE public.schema_migrations TO secrag_reader;

GRANT SELECT(source) ON TABLE public.source_counts TO secrag_reader;

GRANT SELECT(documents) ON TABLE public.source_counts TO secrag_reader;

GRANT SELECT(chunks) ON TABLE public.source_counts TO secrag_reader;

GRANT SELECT(updated_at) ON TABLE public.source_counts TO secrag_reader;

GRANT SELECT(source) ON TABLE public.source_model_counts TO secrag_reader;

GRANT SELECT(model_id) ON TABLE public.source_model_counts TO secrag_reader;

GRANT SELECT(vectors) ON TABLE public.source_model_counts TO secrag_reader;

GRANT SELECT(chunks_embedded) ON TABLE public.source_model_counts TO secrag_reader;

GRANT SELECT(id) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(source) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(version) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(started_at) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(finished_at) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(status) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(phase) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(error_kind) ON TABLE public.source_versions TO secrag_reader;

GRANT SELECT(name) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(kind) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(description) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(category) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(upstream) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(branch) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(tracking) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(current_version) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(last_check_at) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(last_seen_version) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(last_sync_at) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(record_count) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(poll_interval) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(seen_since) ON TABLE public.sources TO secrag_reader;

GRANT SELECT(name) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(state) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(error_kind) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(attempt_id) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(attempt_status) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(attempt_phase) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(attempt_version) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(attempt_at) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(attempt_finished_at) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(running_since) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(last_success_at) ON TABLE public.source_status TO secrag_reader;

GRANT SELECT(technique) ON TABLE public.technique_documents TO secrag_reader;

GRANT SELECT(doc_id) ON TABLE public.technique_documents TO secrag_reader;

GRANT SELECT(source) ON TABLE public.technique_documents TO secrag_reader;

GRANT SELECT(tenant) ON TABLE public.technique_documents TO secrag_reader;

GRANT SELECT(labels) ON TABLE public.technique_documents TO secrag_reader;

GRANT SELECT(techniques) ON TABLE public.technique_documents TO secrag_reader;

GRANT SELECT(model_id) ON TABLE public.trained_models TO secrag_reader;

GRANT SELECT(served_model) ON TABLE public.trained_models TO secrag_reader;

GRANT SELECT(status) ON TABLE public.trained_models TO secrag_reader;

GRANT SELECT(promoted_at) ON TABLE public.trained_models TO secrag_reader;

GRANT SELECT(setting) ON TABLE public.tuned_value TO secrag_reader;

GRANT SELECT(query_type) ON TABLE public.tuned_value TO secrag_reader;

GRANT SELECT(value) ON TABLE public.tuned_value TO secrag_reader;
