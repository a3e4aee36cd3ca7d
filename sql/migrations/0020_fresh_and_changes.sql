-- 0020: sources fresh within minutes, and a change feed (issue 31).

-- Each source's poll interval (its freshness is judged by it, in the API as in the Dagster check) and when
-- the upstream first showed the version last seen: a newer version is stale once it has waited longer than
-- the freshness window to be published, not as soon as it is seen.
ALTER TABLE sources ADD COLUMN poll_interval integer CHECK (poll_interval > 0);
ALTER TABLE sources ADD COLUMN seen_since timestamptz;
UPDATE sources SET seen_since = last_check_at WHERE last_seen_version IS NOT NULL;

-- What each publish added, modified (content hash changed) and removed, against the version it replaced
-- (GET /v1/changes). An entry keeps who could see its document then, for the `visible` check: a removed
-- document has no row left to check. `version_id` is the publish's source_versions row.
CREATE TABLE document_changes (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source      text NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
    doc_id      text NOT NULL,
    title       text NOT NULL,
    change      text NOT NULL CHECK (change IN ('added', 'modified', 'removed')),
    old_version text,
    new_version text NOT NULL,
    version_id  bigint NOT NULL,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    tenant      text,
    acl_users   text[] NOT NULL DEFAULT '{}',
    acl_groups  text[] NOT NULL DEFAULT '{}'
);
-- Newest first, of some sources or of all; pruning by age.
CREATE INDEX document_changes_source_id_idx ON document_changes (source, id DESC);
CREATE INDEX document_changes_changed_at_idx ON document_changes (changed_at);
-- The `visible` check tests cardinality(acl_*) = 0, whose selectivity the planner otherwise guesses at 0.5 %
-- each: it then expected one public entry in 25,000 and read them all for a page (18 ms instead of 0.5).
CREATE STATISTICS document_changes_access ON tenant, (cardinality(acl_users)), (cardinality(acl_groups))
    FROM document_changes;

-- `unchanged` attempts are pruned by age like the change history (a source's last attempt is kept).
CREATE INDEX source_versions_unchanged_idx ON source_versions (finished_at) WHERE status = 'unchanged';
