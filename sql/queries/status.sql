-- Read-only summaries for `secrag status`.

-- name: totals
SELECT
    (SELECT count(*) FROM sources) AS sources,
    (SELECT count(*) FROM documents) AS documents,
    (SELECT count(*) FROM chunks) AS chunks,
    (SELECT count(*) FROM embeddings) AS embeddings,
    (SELECT model_id FROM embedding_models WHERE active) AS active_model

-- name: sources
-- The operator's view: the state as the API derives it, with the failed attempt's full text.
SELECT s.name, s.kind, st.state, s.current_version, s.record_count, s.last_sync_at,
       CASE WHEN st.error_kind IS NOT NULL THEN coalesce(v.error_detail, st.error_kind) END
FROM sources s JOIN source_status st ON st.name = s.name
LEFT JOIN source_versions v ON v.id = st.attempt_id
ORDER BY s.name

-- name: published_versions
SELECT name, current_version FROM sources

-- name: refresh_history
-- Per source: its last finished refresh attempt (when, outcome, phase), its last successful publish and,
-- when that attempt failed, its full error text (the operator's view; the API shows the kind only).
SELECT s.name, st.attempt_at, st.attempt_status, st.attempt_phase, st.last_success_at,
       CASE WHEN st.error_kind IS NOT NULL THEN coalesce(v.error_detail, st.error_kind) END
FROM sources s JOIN source_status st ON st.name = s.name
LEFT JOIN source_versions v ON v.id = st.attempt_id
