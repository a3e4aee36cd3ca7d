-- 0028: the actor of a procedure example (metadata.actor_id) is indexed: POST /v1/coverage of a group reads
-- the group's procedure examples by it, which was a scan of every document (about 57 of 211 ms for a group of
-- 93 techniques on a store of 72,000 chunks, bench/coverage.py).
CREATE INDEX IF NOT EXISTS documents_actor_idx ON documents ((metadata->>'actor_id'));
