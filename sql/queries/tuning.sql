-- Reads of the opt-in query log for `secrag tune`.

-- name: recent_queries
-- Searches only: a plan's top score is taken after its own score threshold filtered the candidates.
SELECT query_type, top_score, result_count
FROM query_log
WHERE logged_at >= now() - make_interval(days => %(days)s) AND endpoint IN ('search', 'mcp:search')
ORDER BY logged_at

-- name: recent_attention
-- The flagged rows of the attention log (serving/feedback/attention.py), newest first.
SELECT endpoint, query_type, query_text, attention
FROM query_log
WHERE logged_at >= now() - make_interval(days => %(days)s) AND attention <> '{}'
ORDER BY logged_at DESC

-- name: lock_tuning
-- One writer at a time (readers of tuned_value are not blocked): the old value read, the audit entry
-- and the new value are one consistent change.
LOCK TABLE tuned_value IN EXCLUSIVE MODE

-- name: tuned_value
SELECT value FROM tuned_value WHERE setting = %(setting)s AND query_type = %(query_type)s

-- name: insert_audit
INSERT INTO tuning_audit (who, action, setting, query_type, old, old_tuned, new, new_tuned, reason, rolls_back)
VALUES (%(who)s, %(action)s, %(setting)s, %(query_type)s, %(old)s, %(old_tuned)s, %(new)s, %(new_tuned)s,
        %(reason)s, %(rolls_back)s)
RETURNING id, at, who, action, setting, query_type, old, old_tuned, new, new_tuned, reason, rolls_back

-- name: set_tuned_value
INSERT INTO tuned_value (setting, query_type, value, audit_id)
VALUES (%(setting)s, %(query_type)s, %(value)s, %(audit_id)s)
ON CONFLICT (setting, query_type) DO UPDATE
SET value = EXCLUDED.value, audit_id = EXCLUDED.audit_id, changed_at = now()

-- name: remove_tuned_value
DELETE FROM tuned_value WHERE setting = %(setting)s AND query_type = %(query_type)s

-- name: audit_entry
SELECT id, at, who, action, setting, query_type, old, old_tuned, new, new_tuned, reason, rolls_back
FROM tuning_audit WHERE id = %(id)s

-- name: audit_history
SELECT id, at, who, action, setting, query_type, old, old_tuned, new, new_tuned, reason, rolls_back
FROM tuning_audit ORDER BY id DESC LIMIT %(limit)s

-- name: audit_beyond
-- The entries older than the newest %(keep)s, oldest first: logged, then dropped.
SELECT id, at, who, action, setting, query_type, old, old_tuned, new, new_tuned, reason, rolls_back
FROM tuning_audit WHERE id < (SELECT min(id) FROM (SELECT id FROM tuning_audit ORDER BY id DESC LIMIT %(keep)s) AS kept)
ORDER BY id

-- name: drop_audit
DELETE FROM tuning_audit WHERE id <= %(id)s
