-- Store snapshots (pipeline/snapshot): the public part of a store written and read with binary COPY.
-- A public source is neither a user folder nor a one-time document's (`secrag ingest`'s sources, named with
-- %(one_time_prefix)s); a public document is of a public source with no tenant, users or groups. Export
-- writes those rows only and an import refuses any other (imported_private_rows). `{columns}` is each
-- table's stored columns (generated and identity ones left out), `{public_sources}` and `{public_documents}`
-- those of public_source_names and public_document_ids, all filled in with psycopg.sql.

-- name: table_columns
-- The columns a snapshot part carries: stored, not generated, not an identity, in table order.
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a
WHERE a.attrelid = to_regclass(%(table)s) AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attgenerated = '' AND a.attidentity = ''
ORDER BY a.attnum

-- name: active_model
SELECT model_id, dimensions FROM embedding_models WHERE active

-- name: public_source_names
SELECT name FROM sources WHERE kind <> 'user_folder' AND NOT starts_with(name, %(one_time_prefix)s)

-- name: public_document_ids
SELECT doc_id FROM documents
WHERE tenant IS NULL AND cardinality(acl_users) = 0 AND cardinality(acl_groups) = 0
  AND source IN ({public_sources})

-- name: export_sources
COPY (SELECT {columns} FROM sources WHERE name IN ({public_sources}) ORDER BY name) TO STDOUT (FORMAT BINARY)

-- name: export_source_versions
-- Each public source's last published attempt: its version and the fingerprint a refresh compares
-- (pipeline/refresh.py), so the importing store's pipeline finds the same inputs unchanged.
COPY (
    SELECT {columns} FROM (
        SELECT DISTINCT ON (v.source) v.* FROM source_versions v
        WHERE v.status = 'published' AND v.source IN ({public_sources})
        ORDER BY v.source, v.id DESC
    ) published ORDER BY source
) TO STDOUT (FORMAT BINARY)

-- name: export_mitre_techniques
COPY (SELECT {columns} FROM mitre_techniques ORDER BY id) TO STDOUT (FORMAT BINARY)

-- name: export_documents
COPY (SELECT {columns} FROM documents WHERE doc_id IN ({public_documents}) ORDER BY doc_id) TO STDOUT (FORMAT BINARY)

-- name: export_document_raw
COPY (
    SELECT {columns} FROM document_raw WHERE doc_id IN ({public_documents}) ORDER BY doc_id
) TO STDOUT (FORMAT BINARY)

-- name: export_document_artefacts
COPY (
    SELECT {columns} FROM document_artefacts WHERE doc_id IN ({public_documents}) ORDER BY doc_id, kind, field, key
) TO STDOUT (FORMAT BINARY)

-- name: export_chunks
COPY (
    SELECT {columns} FROM chunks WHERE doc_id IN ({public_documents}) ORDER BY chunk_id
) TO STDOUT (FORMAT BINARY)

-- name: export_embeddings
-- The active model's vectors of the public chunks' texts, and the promoted sentence model's (%(models)s holds
-- both ids; a vector is keyed by its text's hash and its model).
COPY (
    SELECT {columns} FROM embeddings
    WHERE model_id = ANY(%(models)s) AND content_hash IN (
        SELECT content_hash FROM chunks WHERE doc_id IN ({public_documents})
    ) ORDER BY content_hash, model_id
) TO STDOUT (FORMAT BINARY)

-- name: source_summary
-- Each public source's served version and its public documents and chunks, for the manifest.
SELECT s.name, s.current_version,
       (SELECT count(*) FROM documents d WHERE d.source = s.name AND d.doc_id IN ({public_documents})) AS documents,
       (SELECT count(*) FROM chunks c WHERE c.source = s.name AND c.doc_id IN ({public_documents})) AS chunks
FROM sources s WHERE s.name IN ({public_sources}) ORDER BY s.name

-- name: left_out
-- The documents an export leaves out, by reason (one reason a document: the first that applies).
SELECT count(*) FILTER (WHERE s.kind = 'user_folder' AND NOT starts_with(s.name, %(one_time_prefix)s)),
       count(*) FILTER (WHERE starts_with(s.name, %(one_time_prefix)s)),
       count(*) FILTER (
           WHERE s.kind <> 'user_folder' AND NOT starts_with(s.name, %(one_time_prefix)s)
             AND (d.tenant IS NOT NULL OR cardinality(d.acl_users) > 0 OR cardinality(d.acl_groups) > 0)
       )
FROM documents d JOIN sources s ON s.name = d.source

-- name: newest_publish
-- The newest publish of a public source the store holds (an import refuses a snapshot made before it).
SELECT v.source, v.finished_at FROM source_versions v
WHERE v.status = 'published' AND v.finished_at IS NOT NULL AND v.source IN ({public_sources})
ORDER BY v.finished_at DESC LIMIT 1

-- name: imported_private_rows
-- The first row this import wrote that is not public, as (part, row, reason); none when every row is.
-- The import's rows are those of this transaction (xmin): a user folder's rows already there are older.
-- An import loads in one transaction without savepoints, so every row it writes has its top-level xid.
WITH mine AS (SELECT pg_current_xact_id()::xid AS xid),
written_sources AS (SELECT name, kind FROM sources WHERE xmin = (SELECT xid FROM mine)),
written_public_sources AS (
    SELECT name FROM written_sources WHERE kind <> 'user_folder' AND NOT starts_with(name, %(one_time_prefix)s)
),
written_documents AS (
    SELECT doc_id, source, tenant, acl_users, acl_groups FROM documents WHERE xmin = (SELECT xid FROM mine)
),
written_public_documents AS (
    SELECT doc_id, source FROM written_documents
    WHERE tenant IS NULL AND cardinality(acl_users) = 0 AND cardinality(acl_groups) = 0
      AND source IN (SELECT name FROM written_public_sources)
),
found AS (
    SELECT 1 AS rank, 'sources' AS part, name AS row_key, 'a user folder''s source' AS reason
    FROM written_sources WHERE kind = 'user_folder'
    UNION ALL
    SELECT 2, 'sources', name, 'a one-time document''s source (named ' || %(one_time_prefix)s || '...)'
    FROM written_sources WHERE starts_with(name, %(one_time_prefix)s)
    UNION ALL
    SELECT 3, 'source_versions', source || ' attempt ' || id, 'an attempt of ' || source || ', not a public source of the snapshot'
    FROM source_versions
    WHERE xmin = (SELECT xid FROM mine) AND source NOT IN (SELECT name FROM written_public_sources)
    UNION ALL
    SELECT 4, 'documents', doc_id, 'tenant ' || quote_literal(tenant) FROM written_documents WHERE tenant IS NOT NULL
    UNION ALL
    SELECT 5, 'documents', doc_id, 'users ' || array_to_string(acl_users, ', ')
    FROM written_documents WHERE cardinality(acl_users) > 0
    UNION ALL
    SELECT 6, 'documents', doc_id, 'groups ' || array_to_string(acl_groups, ', ')
    FROM written_documents WHERE cardinality(acl_groups) > 0
    UNION ALL
    SELECT 7, 'documents', doc_id, 'of ' || source || ', not a public source of the snapshot'
    FROM written_documents WHERE source NOT IN (SELECT name FROM written_public_sources)
    UNION ALL
    SELECT 8, 'document_raw', doc_id, 'the upstream form of a document that is not a public one of the snapshot'
    FROM document_raw
    WHERE xmin = (SELECT xid FROM mine) AND doc_id NOT IN (SELECT doc_id FROM written_public_documents)
    UNION ALL
    SELECT 9, 'document_artefacts', a.doc_id || ' ' || a.kind || ' ' || a.key,
           'an artefact of a document that is not a public one of the snapshot, or under another source'
    FROM document_artefacts a LEFT JOIN written_public_documents w ON w.doc_id = a.doc_id
    WHERE a.xmin = (SELECT xid FROM mine) AND w.source IS DISTINCT FROM a.source
    UNION ALL
    SELECT 10, 'chunks', c.chunk_id,
           'a chunk of a document that is not a public one of the snapshot, or under another source'
    FROM chunks c LEFT JOIN written_public_documents w ON w.doc_id = c.doc_id
    WHERE c.xmin = (SELECT xid FROM mine) AND w.source IS DISTINCT FROM c.source
    UNION ALL
    SELECT 11, 'embeddings', content_hash, 'a vector of a text no public chunk of the snapshot holds'
    FROM snapshot_embeddings
    WHERE content_hash NOT IN (
        SELECT content_hash FROM chunks
        WHERE xmin = (SELECT xid FROM mine) AND doc_id IN (SELECT doc_id FROM written_public_documents)
    )
)
SELECT part, row_key, reason FROM found ORDER BY rank, row_key LIMIT 1

-- name: lock_import
-- One import at a time, and none beside another.
SELECT pg_advisory_xact_lock(hashtext('secrag:snapshot-import'))

-- name: public_documents
SELECT count(*) FROM documents WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder')

-- name: drop_unpublished_public_sources
-- Public sources a sensor registered but nothing published (no documents refer to them): the snapshot's
-- rows replace them (with their probe attempts).
DELETE FROM sources WHERE kind <> 'user_folder'

-- name: clear_techniques
DELETE FROM mitre_techniques

-- name: import_maintenance_memory
-- Memory for the HNSW index built after the vectors are in (a graph that does not fit builds many times slower).
SELECT set_config('maintenance_work_mem', %(memory)s, true)

-- name: copy_into
COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)

-- name: stage_embeddings
-- Vectors of texts the store may already hold (a user folder's chunk with the same text) go through a
-- staging table, so those are kept instead of failing the COPY.
CREATE TEMPORARY TABLE snapshot_embeddings (LIKE embeddings INCLUDING DEFAULTS) ON COMMIT DROP

-- name: staged_other_model
-- A staged vector of a model the snapshot does not carry (none: every vector is of the manifest's models).
SELECT model_id, count(*) FROM snapshot_embeddings WHERE model_id <> ALL(%(models)s) GROUP BY model_id
ORDER BY model_id LIMIT 1

-- name: insert_trained_model
-- The snapshot's sentence model, recorded as a candidate with its lineage and gate figures (promoted after, by
-- pipeline/training/promotion.py's checks); a store that trained the same model keeps its own row.
INSERT INTO trained_models (
    model_id, served_model, base_model, replaces, attack_version, data_digest, recipe, validation, baseline,
    passed, status, trained_at, train_seconds
) VALUES (
    %(model_id)s, %(served_model)s, %(base_model)s, %(replaces)s, %(attack_version)s, %(data_digest)s,
    %(recipe)s, %(validation)s, %(baseline)s, %(passed)s, 'candidate', %(trained_at)s::timestamptz,
    %(train_seconds)s
) ON CONFLICT (model_id) DO NOTHING

-- name: insert_staged_embeddings
INSERT INTO embeddings ({columns}) SELECT {columns} FROM snapshot_embeddings ON CONFLICT DO NOTHING

-- name: model_dimensions
SELECT dimensions FROM embedding_models WHERE model_id = %(model)s

-- name: analyze_imported
-- Planner statistics of everything an import wrote (autovacuum would wait for its threshold).
ANALYZE sources, source_versions, mitre_techniques, documents, document_raw, document_artefacts, chunks, embeddings,
    chunk_vectors, document_accesses, technique_documents, trained_models
