-- 0030: a webhook per repository or feed. A poke names its hook (a repository's `owner/name`, or a source's
-- name for a feed), not one source: every source on that repository reads it. A delivery id is unique per hook;
-- the receiver forgets a hook's oldest deliveries beyond its retention (forget_deliveries). Each source keeps
-- the newest poke its probe answered (sources.poked_upto) instead of a seen mark on a poke many sources read.
ALTER TABLE pokes RENAME COLUMN source TO hook;
ALTER TABLE pokes ADD CONSTRAINT pokes_hook_check CHECK (length(hook) BETWEEN 1 AND 200);
ALTER TABLE pokes DROP CONSTRAINT pokes_delivery_id_key;
ALTER TABLE pokes ADD CONSTRAINT pokes_hook_delivery_id_key UNIQUE (hook, delivery_id);
CREATE INDEX pokes_hook_id_idx ON pokes (hook, id);

ALTER TABLE sources ADD COLUMN poked_upto bigint;
UPDATE sources s SET poked_upto = (SELECT max(p.id) FROM pokes p WHERE p.hook = s.name AND p.seen_at IS NOT NULL);
DROP INDEX pokes_unseen_idx;
ALTER TABLE pokes DROP COLUMN seen_at;

-- The receiver's retention of a hook's delivery ids, run as the table's owner so that secrag_hooks needs no
-- SELECT or DELETE: what it received before now() - keep, and all but its newest keep_count, are forgotten.
CREATE FUNCTION forget_deliveries(p_hook text, keep interval, keep_count integer) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH gone AS (
        DELETE FROM pokes
        WHERE hook = p_hook
          AND (received_at < now() - keep
               OR id <= (SELECT id FROM pokes WHERE hook = p_hook ORDER BY id DESC OFFSET keep_count LIMIT 1))
        RETURNING 1
    )
    SELECT count(*)::integer FROM gone
$$;
REVOKE ALL ON FUNCTION forget_deliveries(text, interval, integer) FROM PUBLIC;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'secrag_hooks') THEN
        GRANT INSERT (hook, delivery_id, event) ON pokes TO secrag_hooks;
        GRANT EXECUTE ON FUNCTION forget_deliveries(text, interval, integer) TO secrag_hooks;
    END IF;
END
$$;
