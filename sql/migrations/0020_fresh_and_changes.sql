-- 0020: sources fresh within minutes, and a change feed (issue 31).

-- Each source's poll interval (its freshness is judged by it, in the API as in the Dagster check) and when
-- the upstream first showed the version last seen: a newer version is stale once it has waited longer than
-- the freshness window to be published, not as soon as it is seen.
ALTER TABLE sources ADD COLUMN poll_interval integer CHECK (poll_interval > 0);
ALTER TABLE sources ADD COLUMN seen_since timestamptz;
UPDATE sources SET seen_since = last_check_at WHERE last_seen_version IS NOT NULL;

-- `unchanged` attempts are pruned by age like the change history (a source's last attempt is kept).
CREATE INDEX source_versions_unchanged_idx ON source_versions (finished_at) WHERE status = 'unchanged';
