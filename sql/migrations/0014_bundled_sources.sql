-- 0014: sources shipped with secrag (tracking 'bundled', e.g. the curated clarifications:
-- pipeline/sources/bundled.py), versioned by the content hash of their files.
ALTER TABLE sources DROP CONSTRAINT sources_tracking_check;
ALTER TABLE sources ADD CONSTRAINT sources_tracking_check
    CHECK (tracking IN ('commit', 'release', 'feed', 'bundled'));
