-- 0013: each online record's upstream form, kept at publish time (pipeline/store/publish.py), so
-- GET /v1/docs/{doc_id}/upstream returns exactly that record at exactly the published version from any
-- API pod, without upstream access: one Sigma file, one ATT&CK STIX object, one CAPEC pattern, one KEV
-- entry. A document's row goes with it.
CREATE TABLE document_raw (
    doc_id     text PRIMARY KEY REFERENCES documents (doc_id) ON DELETE CASCADE,
    media_type text NOT NULL,                -- application/json, application/yaml, text/markdown, ...
    whole_file boolean NOT NULL,             -- the record is its upstream file (one record per file)
    size       integer NOT NULL CHECK (size >= 0),  -- bytes of the upstream form, uncompressed (UTF-8)
    raw        bytea NOT NULL                -- zlib-compressed by the pipeline
);
-- Already compressed: TOAST keeps it out of line without trying again.
ALTER TABLE document_raw ALTER COLUMN raw SET STORAGE EXTERNAL;
