-- 0019: refresh state tells one story, and callers see error kinds, not error text.
-- Every refresh attempt is a source_versions row, an unchanged one included (status `unchanged`);
-- a source's state and last error are no longer columns written beside those rows but derived from
-- them (the view source_status), so the API, `secrag status` and the Dagster checks cannot disagree.
-- `error_kind` is a word of the public vocabulary (secrag/error_kinds.py); `error_detail` is the full
-- text (URLs, local paths, git's stderr, driver messages) and is never readable by the API's role.
ALTER TABLE source_versions DROP CONSTRAINT source_versions_status_check;
ALTER TABLE source_versions ADD CONSTRAINT source_versions_status_check
    CHECK (status IN ('running', 'published', 'unchanged', 'refused', 'failed', 'abandoned'));
ALTER TABLE source_versions RENAME COLUMN reason TO error_detail;
ALTER TABLE source_versions ADD COLUMN error_kind text CHECK (error_kind ~ '^[a-z_]{1,40}$');

-- Earlier attempts: a kind from what was recorded (refusal texts and phases were secrag's own).
UPDATE source_versions SET error_kind = CASE
    WHEN status = 'abandoned' THEN 'abandoned'
    WHEN status = 'refused' AND error_detail LIKE 'empty result%' THEN 'empty'
    WHEN status = 'refused' AND error_detail LIKE 'shrank%' THEN 'shrank'
    WHEN status = 'refused' THEN 'config_error'
    WHEN error_class = 'FetchTimeout' THEN 'upstream_timeout'
    WHEN error_class = 'FetchTooLarge' THEN 'upstream_too_large'
    WHEN phase = 'probe' THEN 'probe_failed'
    WHEN phase = 'fetch' THEN 'fetch_failed'
    WHEN phase = 'parse' AND (error_detail LIKE 'nothing parsed%' OR error_detail LIKE 'no files match%') THEN 'empty'
    WHEN phase = 'parse' THEN 'parse_failed'
    WHEN phase = 'publish' THEN 'database_error'
    ELSE 'internal_error' END
WHERE status IN ('failed', 'refused', 'abandoned');

-- The latest attempt of a source is read on every /v1/sources and every check.
CREATE INDEX source_versions_source_id_idx ON source_versions (source, id DESC);

ALTER TABLE sources DROP COLUMN state;
ALTER TABLE sources DROP COLUMN last_error;

-- A source's state is its last finished attempt's outcome: `new` before any, `ok` after a publish or an
-- unchanged check, else `failed`, `refused` or `abandoned` with that attempt's error kind. A running
-- attempt does not change it (`running_since` says one is under way). Only safe columns: the view runs
-- with its owner's rights, so the API reads it without reading error_detail.
CREATE VIEW source_status AS
SELECT s.name,
       CASE WHEN f.status IS NULL THEN 'new'
            WHEN f.status IN ('published', 'unchanged') THEN 'ok'
            ELSE f.status END AS state,
       f.error_kind,
       f.id AS attempt_id,
       f.status AS attempt_status,
       f.phase AS attempt_phase,
       f.version AS attempt_version,
       f.started_at AS attempt_at,
       f.finished_at AS attempt_finished_at,
       r.started_at AS running_since,
       (SELECT max(p.finished_at) FROM source_versions p
        WHERE p.source = s.name AND p.status = 'published') AS last_success_at
FROM sources s
LEFT JOIN LATERAL (
    SELECT v.id, v.status, v.phase, v.version, v.error_kind, v.started_at, v.finished_at
    FROM source_versions v WHERE v.source = s.name AND v.status <> 'running'
    ORDER BY v.id DESC LIMIT 1
) f ON true
LEFT JOIN LATERAL (
    SELECT v.started_at FROM source_versions v WHERE v.source = s.name AND v.status = 'running'
    ORDER BY v.id DESC LIMIT 1
) r ON true;
