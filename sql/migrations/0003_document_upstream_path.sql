-- 0003: where each document lives upstream (file path inside the repository or feed), so the API
-- can refetch the authoritative record for the recorded version.
ALTER TABLE documents ADD COLUMN upstream_path text;
