-- Pokes: webhooks' "look now" (migrations 0029, 0030). The receiver inserts one per delivery, naming its hook (a
-- repository's owner/name, or a feed source's name); every source on that hook reads it on its sensor's tick.

-- name: insert_poke
-- As secrag_hooks (INSERT only; naming the conflict target would need SELECT on it): no row when the hook saw
-- the delivery id (their one unique key), which the receiver counts as a replay.
INSERT INTO pokes (hook, delivery_id, event) VALUES (%(hook)s, %(delivery_id)s, %(event)s)
ON CONFLICT DO NOTHING

-- name: forget_deliveries
-- The hook's retention, after each accepted delivery: deliveries older than keep_seconds, and all but the newest
-- keep_count, are forgotten (a forgotten id is accepted again; a poke only ever makes a sensor look).
SELECT forget_deliveries(%(hook)s, make_interval(secs => %(keep_seconds)s), %(keep_count)s)

-- name: poke_tick
-- A source sensor's tick, one read: the newest poke on any of its hooks that its probes have not answered, and
-- when it last probed the upstream (an answered probe sets last_check_at, a failed one its attempt's
-- finished_at), so a failing upstream keeps the cadence.
SELECT (SELECT max(id) FROM pokes
        WHERE hook = ANY(%(hooks)s)
          AND id > coalesce((SELECT poked_upto FROM sources WHERE name = %(source)s), 0)) AS poke,
       greatest(
           (SELECT last_check_at FROM sources WHERE name = %(source)s),
           (SELECT max(finished_at) FROM source_versions
            WHERE source = %(source)s AND phase = 'probe' AND status = 'failed')
       ) AS probed_at

-- name: mark_pokes_seen
-- The pokes up to `upto` are answered for this source (a later one waits for the next tick).
UPDATE sources SET poked_upto = greatest(coalesce(poked_upto, 0), %(upto)s) WHERE name = %(source)s
