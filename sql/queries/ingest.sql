-- One-time documents (migration 0016): `secrag ingest` writes them, the ingested/documents asset
-- publishes them.

-- name: add
INSERT INTO ingested_documents (name, filename, size, sha256, content, tenant, acl_users, acl_groups, added_by)
VALUES (%(name)s, %(filename)s, %(size)s, %(sha256)s, %(content)s, %(tenant)s, %(acl_users)s, %(acl_groups)s,
        %(added_by)s)
ON CONFLICT (name) DO UPDATE
SET filename = EXCLUDED.filename, size = EXCLUDED.size, sha256 = EXCLUDED.sha256, content = EXCLUDED.content,
    tenant = EXCLUDED.tenant, acl_users = EXCLUDED.acl_users, acl_groups = EXCLUDED.acl_groups,
    added_by = EXCLUDED.added_by, added_at = now(), removed_at = NULL
WHERE %(replace)s OR ingested_documents.removed_at IS NOT NULL
RETURNING name

-- name: remove
UPDATE ingested_documents SET removed_at = now() WHERE name = %(name)s AND removed_at IS NULL RETURNING name

-- name: listing
SELECT name, filename, size, tenant, acl_users, acl_groups, added_by, added_at, removed_at
FROM ingested_documents ORDER BY name

-- name: to_publish
SELECT name, filename, sha256, content, tenant, acl_users, acl_groups, removed_at
FROM ingested_documents ORDER BY name

-- name: forget
DELETE FROM ingested_documents WHERE name = %(name)s AND removed_at IS NOT NULL

-- name: fingerprint
-- What the sensor compares: any add, replace or removal changes it.
-- added_at is in it, so adding again what was removed is a new state (the sensor's run key differs).
SELECT coalesce(md5(string_agg(name || ':' || sha256 || ':' || added_at::text || ':' || coalesce(removed_at::text, '') || ':'
                               || coalesce(tenant, '') || ':' || array_to_string(acl_users, ',') || ':'
                               || array_to_string(acl_groups, ','), '|' ORDER BY name)), '')
FROM ingested_documents

-- name: lock
-- Runs of ingested/documents one at a time (a session lock, released by `unlock` or the session's end).
SELECT pg_advisory_lock(hashtext(%(key)s))

-- name: unlock
SELECT pg_advisory_unlock(hashtext(%(key)s))

-- name: stored_names
SELECT name FROM ingested_documents WHERE removed_at IS NULL ORDER BY name

-- name: registered
-- Which of these sources were ever published (a file that could not be read never was).
SELECT name FROM sources WHERE name = ANY(%(names)s::text[]) ORDER BY name
