-- Store snapshots (pipeline/snapshot): the public part of a store written and read with binary COPY.
-- A public source is any but a user folder (`secrag ingest`'s one-time documents are user folders too);
-- `{columns}` is each table's stored columns (generated and identity ones left out), filled in with
-- psycopg.sql identifiers from `table_columns`.

-- name: table_columns
-- The columns a snapshot part carries: stored, not generated, not an identity, in table order.
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_attribute a
WHERE a.attrelid = to_regclass(%(table)s) AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attgenerated = '' AND a.attidentity = ''
ORDER BY a.attnum

-- name: active_model
SELECT model_id, dimensions FROM embedding_models WHERE active

-- name: export_sources
COPY (SELECT {columns} FROM sources WHERE kind <> 'user_folder' ORDER BY name) TO STDOUT (FORMAT BINARY)

-- name: export_source_versions
-- Each public source's last published attempt: its version and the fingerprint a refresh compares
-- (pipeline/refresh.py), so the importing store's pipeline finds the same inputs unchanged.
COPY (
    SELECT {columns} FROM (
        SELECT DISTINCT ON (v.source) v.* FROM source_versions v
        WHERE v.status = 'published' AND v.source IN (SELECT name FROM sources WHERE kind <> 'user_folder')
        ORDER BY v.source, v.id DESC
    ) published ORDER BY source
) TO STDOUT (FORMAT BINARY)

-- name: export_mitre_techniques
COPY (SELECT {columns} FROM mitre_techniques ORDER BY id) TO STDOUT (FORMAT BINARY)

-- name: export_documents
COPY (
    SELECT {columns} FROM documents
    WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder') ORDER BY doc_id
) TO STDOUT (FORMAT BINARY)

-- name: export_document_raw
COPY (
    SELECT {columns} FROM document_raw
    WHERE doc_id IN (
        SELECT doc_id FROM documents WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder')
    ) ORDER BY doc_id
) TO STDOUT (FORMAT BINARY)

-- name: export_document_artefacts
COPY (
    SELECT {columns} FROM document_artefacts
    WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder') ORDER BY doc_id, kind, field, key
) TO STDOUT (FORMAT BINARY)

-- name: export_chunks
COPY (
    SELECT {columns} FROM chunks
    WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder') ORDER BY chunk_id
) TO STDOUT (FORMAT BINARY)

-- name: export_embeddings
-- The model's vectors of the public chunks' texts (a vector is keyed by its text's hash alone).
COPY (
    SELECT {columns} FROM embeddings
    WHERE model_id = %(model)s AND content_hash IN (
        SELECT content_hash FROM chunks WHERE source IN (SELECT name FROM sources WHERE kind <> 'user_folder')
    ) ORDER BY content_hash
) TO STDOUT (FORMAT BINARY)

-- name: source_summary
-- Each public source's served version and size, for the manifest.
SELECT s.name, s.current_version,
       (SELECT count(*) FROM documents d WHERE d.source = s.name) AS documents,
       (SELECT count(*) FROM chunks c WHERE c.source = s.name) AS chunks
FROM sources s WHERE s.kind <> 'user_folder' ORDER BY s.name

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

-- name: insert_staged_embeddings
INSERT INTO embeddings ({columns}) SELECT {columns} FROM snapshot_embeddings ON CONFLICT DO NOTHING

-- name: model_dimensions
SELECT dimensions FROM embedding_models WHERE model_id = %(model)s

-- name: analyze_imported
-- Planner statistics of everything an import wrote (autovacuum would wait for its threshold).
ANALYZE sources, source_versions, mitre_techniques, documents, document_raw, document_artefacts, chunks, embeddings,
    chunk_vectors, document_accesses, technique_documents
