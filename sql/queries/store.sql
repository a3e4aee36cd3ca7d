-- Writes of the pipeline: sources, versions, atomic publish of one source version.

-- name: upsert_source
INSERT INTO sources (name, kind, description, category, upstream, branch, tracking, poll_interval)
VALUES (%(name)s, %(kind)s, %(description)s, %(category)s, %(upstream)s, %(branch)s, %(tracking)s,
        %(poll_interval)s)
ON CONFLICT (name) DO UPDATE SET
    kind = EXCLUDED.kind, description = EXCLUDED.description, category = EXCLUDED.category,
    upstream = EXCLUDED.upstream, branch = EXCLUDED.branch, tracking = EXCLUDED.tracking,
    poll_interval = EXCLUDED.poll_interval, updated_at = now()
WHERE (sources.kind, sources.description, sources.category, sources.upstream, sources.branch, sources.tracking,
       sources.poll_interval)
      IS DISTINCT FROM (EXCLUDED.kind, EXCLUDED.description, EXCLUDED.category, EXCLUDED.upstream,
                        EXCLUDED.branch, EXCLUDED.tracking, EXCLUDED.poll_interval)

-- name: record_check
-- A successful probe: when, what it saw, and since when the upstream shows that version (a failed probe is
-- an attempt row instead, so last_check_at is the last time the upstream answered).
UPDATE sources SET last_check_at = now(),
    seen_since = CASE WHEN last_seen_version IS DISTINCT FROM %(version)s OR seen_since IS NULL
                      THEN now() ELSE seen_since END,
    last_seen_version = %(version)s
WHERE name = %(source)s

-- name: record_probe_failure
-- A sensor's failed probe: a failed attempt, or, when the source's last finished attempt already is a failed
-- probe of the same kind, that row brought up to date (an upstream down for a day is one row, not one a tick).
WITH last AS (
    SELECT v.id FROM source_status st JOIN source_versions v ON v.id = st.attempt_id
    WHERE st.name = %(source)s AND v.status = 'failed' AND v.phase = 'probe' AND v.error_kind = %(error_kind)s
), bumped AS (
    UPDATE source_versions SET finished_at = now(), error_class = %(error_class)s, error_detail = %(error_detail)s
    WHERE id IN (SELECT id FROM last)
    RETURNING id
), added AS (
    INSERT INTO source_versions (source, version, status, phase, error_class, error_kind, error_detail, finished_at)
    SELECT %(source)s, NULL, 'failed', 'probe', %(error_class)s, %(error_kind)s, %(error_detail)s, now()
    WHERE NOT EXISTS (SELECT 1 FROM last)
    RETURNING id
)
SELECT id FROM bumped UNION ALL SELECT id FROM added

-- name: record_probe_recovery
-- A successful probe after failed ones that shows the version served: an `unchanged` attempt, so the source's
-- state is `ok` again (a newer version is for its refresh to record).
INSERT INTO source_versions (source, version, status, phase, records_parsed, records_unchanged, finished_at)
SELECT s.name, s.current_version, 'unchanged', 'probe', s.record_count, s.record_count, now()
FROM sources s JOIN source_status st ON st.name = s.name JOIN source_versions v ON v.id = st.attempt_id
WHERE s.name = %(source)s AND s.current_version = %(version)s AND v.status = 'failed' AND v.phase = 'probe'
RETURNING id

-- name: prune_changes
-- The change history older than the retention (SECRAG_CHANGE_HISTORY_DAYS).
DELETE FROM document_changes WHERE changed_at < now() - make_interval(days => %(days)s)

-- name: prune_accesses
-- The accesses of documents that are gone and have no change entry left to judge (migration 0025).
DELETE FROM document_accesses a
WHERE NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = a.doc_id)
  AND NOT EXISTS (SELECT 1 FROM document_changes c WHERE c.doc_id = a.doc_id)

-- name: prune_unchanged_attempts
-- `unchanged` attempts older than the retention, but never a source's last finished attempt (its state).
DELETE FROM source_versions v
WHERE v.status = 'unchanged' AND v.finished_at < now() - make_interval(days => %(days)s)
  AND NOT EXISTS (SELECT 1 FROM source_status st WHERE st.attempt_id = v.id)

-- name: begin_version
-- The session that runs the attempt is recorded, so a later attempt can tell a dead one from a live one.
INSERT INTO source_versions (source, version, status, phase, backend_pid, backend_start)
SELECT %(source)s, %(version)s, 'running', %(phase)s, pg_backend_pid(), a.backend_start
FROM pg_stat_activity a WHERE a.pid = pg_backend_pid()
RETURNING id

-- name: record_failed_attempt
-- An attempt that failed before it had a running row (a probe, a fetch): one finished row, with what the
-- failure names (the directories of a folder that could not be listed).
INSERT INTO source_versions (source, version, status, phase, error_class, error_kind, error_detail, details,
                             finished_at)
VALUES (%(source)s, %(version)s, 'failed', %(phase)s, %(error_class)s, %(error_kind)s, %(error_detail)s,
        %(details)s, now())
RETURNING id

-- name: record_unchanged_attempt
-- An attempt that found the served version built from the same inputs: a finished `unchanged` row.
WITH synced AS (
    UPDATE sources SET last_sync_at = now(), updated_at = now()
    WHERE name = %(source)s AND current_version = %(version)s
    RETURNING name, record_count
), attempt AS (
    INSERT INTO source_versions (source, version, status, phase, records_parsed, records_unchanged, finished_at)
    SELECT name, %(version)s, 'unchanged', 'probe', record_count, record_count, now() FROM synced
)
SELECT record_count FROM synced

-- name: abandon_dead_attempts
-- `running` rows whose database session is gone: their process was killed or crashed mid-attempt.
UPDATE source_versions v
SET status = 'abandoned', finished_at = now(), error_kind = 'abandoned',
    error_detail = 'the process running this attempt ended without finishing it (killed or crashed)'
WHERE v.status = 'running'
  AND NOT EXISTS (
      SELECT 1 FROM pg_stat_activity a WHERE a.pid = v.backend_pid AND a.backend_start = v.backend_start
  )
RETURNING v.source, v.id

-- name: finish_version
UPDATE source_versions SET
    finished_at = now(), status = %(status)s, error_kind = %(error_kind)s, error_detail = %(error_detail)s,
    phase = coalesce(%(phase)s, phase), error_class = %(error_class)s,
    records_parsed = %(parsed)s, records_inserted = %(inserted)s, records_updated = %(updated)s,
    records_deleted = %(deleted)s, records_unchanged = %(unchanged)s, records_skipped = %(skipped)s,
    details = %(details)s
WHERE id = %(id)s

-- name: served_records
SELECT record_count FROM sources WHERE name = %(source)s

-- name: lock_source
SELECT record_count, current_version FROM sources WHERE name = %(source)s FOR UPDATE

-- name: served_metadata_kinds
-- The served documents per kind, a kind being the text of one metadata key (pipeline/sources/shape.py).
SELECT metadata ->> %(key)s, count(*) FROM documents
WHERE source = %(source)s AND jsonb_typeof(metadata -> %(key)s) = 'string' AND metadata ->> %(key)s <> ''
GROUP BY 1

-- name: served_folder_kinds
-- The served documents per kind, a kind being the first folder of the document's upstream path.
SELECT split_part(upstream_path, '/', 1), count(*) FROM documents
WHERE source = %(source)s AND strpos(upstream_path, '/') > 0
GROUP BY 1

-- name: existing_documents
SELECT d.doc_id, d.content_hash, coalesce(string_agg(c.content_hash, ',' ORDER BY c.ordinal), ''), d.url
FROM documents d LEFT JOIN chunks c ON c.doc_id = d.doc_id
WHERE d.source = %(source)s
GROUP BY d.doc_id, d.content_hash, d.url

-- name: record_removals
-- The documents a publish removes, before they are deleted: their titles and who could see them.
INSERT INTO document_changes (source, doc_id, title, change, old_version, new_version, version_id, tenant,
                              acl_users, acl_groups)
SELECT d.source, d.doc_id, d.title, 'removed', %(old_version)s, %(new_version)s, %(version_id)s, d.tenant,
       d.acl_users, d.acl_groups
FROM documents d WHERE d.doc_id = ANY(%(ids)s)

-- name: copy_changes
-- The documents a publish adds or modifies (content hash changed), with the access they are published with.
COPY document_changes (source, doc_id, title, change, old_version, new_version, version_id, tenant, acl_users,
                       acl_groups) FROM STDIN

-- name: delete_documents
DELETE FROM documents WHERE doc_id = ANY(%(ids)s)

-- name: delete_chunks
DELETE FROM chunks WHERE doc_id = ANY(%(ids)s)

-- name: apply_access
-- Who may see a source's documents follows its configuration even when no document changed
-- (a folder whose ACL changed in folders.yaml), before removals are recorded (their entries take it).
UPDATE documents SET tenant = %(tenant)s, acl_users = %(acl_users)s, acl_groups = %(acl_groups)s, updated_at = now()
WHERE source = %(source)s
  AND (tenant IS DISTINCT FROM %(tenant)s OR acl_users <> %(acl_users)s OR acl_groups <> %(acl_groups)s)

-- name: update_document
UPDATE documents SET
    source_version = %(source_version)s, title = %(title)s, url = %(url)s, body = %(body)s,
    metadata = %(metadata)s, techniques = %(techniques)s, platforms = %(platforms)s, tags = %(tags)s,
    content_hash = %(content_hash)s, tenant = %(tenant)s, acl_users = %(acl_users)s,
    acl_groups = %(acl_groups)s, upstream_path = %(upstream_path)s, media_type = %(media_type)s, updated_at = now()
WHERE doc_id = %(doc_id)s

-- name: copy_documents
COPY documents (doc_id, source, source_version, title, url, body, metadata, techniques, platforms, tags,
                content_hash, tenant, acl_users, acl_groups, upstream_path, media_type) FROM STDIN

-- name: delete_raw
DELETE FROM document_raw WHERE doc_id = ANY(%(ids)s)

-- name: copy_raw
-- Each record's upstream form (migration 0013), zlib-compressed.
COPY document_raw (doc_id, media_type, whole_file, size, raw) FROM STDIN

-- name: copy_chunks
COPY chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, identifiers, content_hash,
             char_start, char_end, heading, pages)
FROM STDIN

-- name: delete_artefacts
-- A publish rewrites its source's artefact rows whole (migration 0022), in its transaction; a kept document's
-- rows stay with it (its file could not be read, so it has no record to write them from).
DELETE FROM document_artefacts WHERE source = %(source)s AND doc_id <> ALL(%(kept)s::text[])

-- name: copy_artefacts
COPY document_artefacts (doc_id, source, kind, field, value, key, folded, pattern) FROM STDIN

-- name: mark_published
UPDATE sources SET current_version = %(version)s, last_sync_at = now(),
    record_count = %(records)s, updated_at = now()
WHERE name = %(source)s

-- name: technique_names
SELECT id, full_name FROM mitre_techniques WHERE NOT revoked AND NOT deprecated

-- name: replace_techniques_delete
DELETE FROM mitre_techniques

-- name: copy_techniques
COPY mitre_techniques (id, name, full_name, tactics, platforms, parent, revoked, deprecated, replaced_by, version,
                      domain)
FROM STDIN

-- name: chunks_without_vectors
SELECT DISTINCT ON (c.content_hash) c.content_hash, c.title, c.enriched_text
FROM chunks c
WHERE (%(source)s::text IS NULL OR c.source = %(source)s::text)
  AND NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash AND e.model_id = %(model)s)
ORDER BY c.content_hash

-- name: count_chunks
SELECT count(*) FROM chunks WHERE (%(source)s::text IS NULL OR source = %(source)s::text)

-- name: copy_embeddings
COPY embeddings (content_hash, model_id, vector) FROM STDIN WITH (FORMAT BINARY)

-- name: ensure_model
INSERT INTO embedding_models (model_id, dimensions) VALUES (%(model)s, %(dimensions)s)
ON CONFLICT (model_id) DO NOTHING

-- name: lock_model_indexes
-- Runs creating a model's HNSW index take turns (two CREATE INDEX of one name would collide).
SELECT pg_advisory_xact_lock(hashtext('secrag:embedding-model-indexes'))

-- name: model_index_exists
-- An HNSW index whose predicate is this model (the migrations made the first model's; later ones are
-- made by the first embedding pass of their model).
SELECT EXISTS (
    SELECT 1 FROM pg_indexes
    WHERE schemaname = current_schema() AND tablename = 'embeddings'
      AND strpos(indexdef, 'USING hnsw') > 0 AND strpos(indexdef, quote_literal(%(model)s::text)) > 0
)

-- name: model_inventory
-- Every embedding model with its vector count and whether it is the active one.
SELECT m.model_id, m.dimensions, m.active, (SELECT count(*) FROM embeddings e WHERE e.model_id = m.model_id)
FROM embedding_models m ORDER BY m.model_id

-- name: model_indexes
SELECT indexname FROM pg_indexes
WHERE schemaname = current_schema() AND tablename = 'embeddings'
  AND strpos(indexdef, 'USING hnsw') > 0 AND strpos(indexdef, quote_literal(%(model)s::text)) > 0

-- name: index_exists
SELECT to_regclass(%(name)s) IS NOT NULL

-- name: source_chunks
-- Each source's chunks (migration 0007's counts, kept by every publish): which sources are large.
SELECT source, chunks FROM source_counts ORDER BY source

-- name: maintenance_memory
-- Memory for the session's index builds: an HNSW graph that does not fit spills and builds many times slower.
SELECT set_config('maintenance_work_mem', %(memory)s, false)

-- name: delete_model_vectors
DELETE FROM embeddings WHERE model_id = %(model)s

-- name: delete_model
-- Only a model that is not active (the API may be searching with the active one).
DELETE FROM embedding_models WHERE model_id = %(model)s AND NOT active

-- name: refresh_source_counts
-- The source's document and chunk counts (see migration 0007), in the caller's transaction.
INSERT INTO source_counts (source, documents, chunks, updated_at)
VALUES (%(source)s,
        (SELECT count(*) FROM documents WHERE source = %(source)s),
        (SELECT count(*) FROM chunks WHERE source = %(source)s),
        now())
ON CONFLICT (source) DO UPDATE
SET documents = EXCLUDED.documents, chunks = EXCLUDED.chunks, updated_at = EXCLUDED.updated_at

-- name: clear_source_model_counts
DELETE FROM source_model_counts WHERE source = %(source)s

-- name: refresh_source_model_counts
-- Vectors and embedded chunks of the source per model.
INSERT INTO source_model_counts (source, model_id, vectors, chunks_embedded)
SELECT c.source, e.model_id, count(DISTINCT e.content_hash), count(*)
FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash
WHERE c.source = %(source)s
GROUP BY c.source, e.model_id

-- name: all_source_names
SELECT name FROM sources ORDER BY name

-- name: refresh_model_vectors
-- The model's vector count (migration 0008), after an embedding pass.
UPDATE embedding_models SET vectors = (SELECT count(*) FROM embeddings WHERE model_id = %(model)s)
WHERE model_id = %(model)s

-- name: analyze_embedded
-- Planner statistics after an embedding pass that wrote vectors (chunk_vectors takes them through its trigger):
-- without them the planner guesses the tables' sizes from their pages (a thousand small vectors as a dozen rows),
-- sorts exact distances where it would walk the HNSW index, and changes its plan once autovacuum's ANALYZE
-- runs: the same search would be answered two ways depending on its timing.
ANALYZE embeddings, chunk_vectors

-- name: analyze_published
-- Planner and lexeme statistics after a publish that changed rows: autovacuum waits for 10 % of a
-- table to change, so a new source (OSSEM's 2,063 chunks are 4 % of a full store) stayed unknown to
-- the estimates that choose exact vector distances and full-text pools (serving/search/lexicon.py). The
-- change history's, for the plan of GET /v1/changes (migration 0020); the artefacts', for lookups (0022).
ANALYZE documents, chunks, document_changes, document_artefacts
