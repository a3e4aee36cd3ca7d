-- Read-only summaries for `secrag status`.

-- name: totals
SELECT
    (SELECT count(*) FROM sources) AS sources,
    (SELECT count(*) FROM documents) AS documents,
    (SELECT count(*) FROM chunks) AS chunks,
    (SELECT count(*) FROM embeddings) AS embeddings,
    (SELECT model_id FROM embedding_models WHERE active) AS active_model

-- name: sources
SELECT name, kind, state, current_version, record_count, last_sync_at, last_error
FROM sources
ORDER BY name

-- name: published_versions
SELECT name, current_version FROM sources

-- name: refresh_history
-- Per source: its last refresh attempt (when, outcome, phase), its last successful publish, its last error.
SELECT s.name, a.started_at, a.status, a.phase,
       (SELECT max(p.finished_at) FROM source_versions p WHERE p.source = s.name AND p.status = 'published'),
       s.last_error
FROM sources s
LEFT JOIN LATERAL (
    SELECT v.started_at, v.status, v.phase FROM source_versions v WHERE v.source = s.name ORDER BY v.id DESC LIMIT 1
) a ON true
