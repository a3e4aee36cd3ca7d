-- Reads of the opt-in query log for `secrag tune`.

-- name: recent_queries
-- Searches only: a plan's top score is taken after its own score threshold filtered the candidates.
SELECT query_type, top_score, result_count
FROM query_log
WHERE logged_at >= now() - make_interval(days => %(days)s) AND endpoint IN ('search', 'mcp:search')
ORDER BY logged_at

-- name: recent_attention
-- The flagged rows of the attention log (serving/attention.py), newest first.
SELECT endpoint, query_type, query_text, attention
FROM query_log
WHERE logged_at >= now() - make_interval(days => %(days)s) AND attention <> '{}'
ORDER BY logged_at DESC
