-- 0006: every refresh attempt leaves a source_versions row, whichever phase it failed in.
-- A failed probe knows no version yet (version becomes nullable); `phase` and `error_class` say
-- where and how an attempt failed; `abandoned` marks a `running` row whose process died, which the
-- next attempt recognises by the database session that began it (backend_pid + backend_start).
ALTER TABLE source_versions ALTER COLUMN version DROP NOT NULL;
ALTER TABLE source_versions ADD COLUMN phase text
    CHECK (phase IS NULL OR phase IN ('probe', 'fetch', 'parse', 'publish'));
ALTER TABLE source_versions ADD COLUMN error_class text;
ALTER TABLE source_versions ADD COLUMN backend_pid integer;
ALTER TABLE source_versions ADD COLUMN backend_start timestamptz;
ALTER TABLE source_versions DROP CONSTRAINT source_versions_status_check;
ALTER TABLE source_versions ADD CONSTRAINT source_versions_status_check
    CHECK (status IN ('running', 'published', 'refused', 'failed', 'abandoned'));
CREATE INDEX source_versions_running_idx ON source_versions (source) WHERE status = 'running';
