-- Pokes: webhooks' "look now" (migration 0029). The receiver inserts; the sources' sensors read and mark.

-- name: insert_poke
-- As secrag_hooks (INSERT only; naming the conflict target would need SELECT on it): no row when the delivery
-- id was seen (its one unique key), which the receiver counts as a replay.
INSERT INTO pokes (source, delivery_id, event) VALUES (%(source)s, %(delivery_id)s, %(event)s)
ON CONFLICT DO NOTHING

-- name: unseen_pokes
-- A sensor's cheap tick: the source's unseen pokes (partial index pokes_unseen_idx).
SELECT id, event, received_at FROM pokes WHERE source = %(source)s AND seen_at IS NULL ORDER BY id

-- name: mark_pokes_seen
UPDATE pokes SET seen_at = now() WHERE source = %(source)s AND seen_at IS NULL AND id <= %(upto)s

-- name: poke_tick
-- A source sensor's tick, one read: its newest unseen poke and when it last probed the upstream (an answered
-- probe sets last_check_at, a failed one its attempt's finished_at), so a failing upstream keeps the cadence.
SELECT (SELECT max(id) FROM pokes WHERE source = %(source)s AND seen_at IS NULL) AS poke,
       greatest(
           (SELECT last_check_at FROM sources WHERE name = %(source)s),
           (SELECT max(finished_at) FROM source_versions
            WHERE source = %(source)s AND phase = 'probe' AND status = 'failed')
       ) AS probed_at
