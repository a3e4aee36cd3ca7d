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
