-- Reads and model activation of the Dagster pipeline (asset checks, sensors, schedules).

-- name: source_state
SELECT s.current_version, s.last_seen_version, s.last_check_at, s.last_sync_at, st.state, s.record_count,
       st.error_kind, s.seen_since
FROM sources s JOIN source_status st ON st.name = s.name WHERE s.name = %(source)s

-- name: version_seen_since
-- When the probes first saw the source at this version (none for a version they never saw: a pin).
SELECT seen_since FROM sources WHERE name = %(source)s AND last_seen_version = %(version)s

-- name: source_chunk_coverage
SELECT count(*) AS chunks,
       count(*) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash AND e.model_id = %(model)s
       )) AS missing
FROM chunks c WHERE c.source = %(source)s

-- name: source_wrong_dimensions
SELECT count(*) FROM chunks c
JOIN embeddings e ON e.content_hash = c.content_hash AND e.model_id = %(model)s
WHERE c.source = %(source)s AND vector_dims(e.vector) <> %(dimensions)s

-- name: unresolved_techniques
SELECT t.id, count(*) AS documents
FROM documents d CROSS JOIN LATERAL unnest(d.techniques) AS t(id)
WHERE d.source = %(source)s AND NOT EXISTS (SELECT 1 FROM mitre_techniques m WHERE m.id = t.id)
GROUP BY t.id ORDER BY documents DESC, t.id

-- name: technique_reference_count
SELECT count(*) FROM documents d CROSS JOIN LATERAL unnest(d.techniques) AS t(id) WHERE d.source = %(source)s

-- name: lookup_size
SELECT count(*) AS techniques, count(*) FILTER (WHERE NOT revoked AND NOT deprecated) AS active
FROM mitre_techniques

-- name: active_model
SELECT model_id FROM embedding_models WHERE active

-- name: lock_models
SELECT model_id, active FROM embedding_models ORDER BY model_id FOR UPDATE

-- name: chunks_missing_model
SELECT count(*) FROM chunks c
WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash AND e.model_id = %(model)s)

-- name: model_has_vectors
SELECT EXISTS (SELECT 1 FROM embeddings WHERE model_id = %(model)s)

-- name: deactivate_models
UPDATE embedding_models SET active = false WHERE active AND model_id <> %(model)s

-- name: activate_model
UPDATE embedding_models SET active = true, activated_at = now() WHERE model_id = %(model)s AND NOT active

-- name: last_published_fingerprint
SELECT details->>'fingerprint' FROM source_versions
WHERE source = %(source)s AND status = 'published'
ORDER BY id DESC LIMIT 1

-- name: last_attempt
-- The source's last finished refresh attempt, as source_status (and so /v1/sources) reads it.
SELECT v.status, v.phase, v.version, v.error_class, v.error_kind, v.error_detail, v.started_at
FROM source_status st JOIN source_versions v ON v.id = st.attempt_id WHERE st.name = %(source)s

-- name: unenriched_documents
-- Documents of the source naming a known, live technique whose first chunk lacks that technique's name.
SELECT count(DISTINCT d.doc_id) AS unenriched,
       (SELECT count(*) FROM documents x WHERE x.source = %(source)s AND x.techniques <> '{}') AS technique_bearing
FROM documents d
JOIN mitre_techniques t ON t.id = ANY(d.techniques) AND NOT t.revoked AND NOT t.deprecated
JOIN chunks c ON c.doc_id = d.doc_id AND c.ordinal = 0
WHERE d.source = %(source)s AND position(t.name IN c.enriched_text) = 0
