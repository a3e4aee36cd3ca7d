-- 0025: every access each document has had, so that the change feed follows access (issue 43). An entry of
-- document_changes keeps the access it was recorded with; once its document is removed there is no row left
-- to check, and an entry recorded before the document's folder was narrowed showed its title again to the
-- callers who had lost it. GET /v1/changes now shows an entry of a removed document only to a caller who may
-- see every access the document ever had (the narrowest of them), one of a live document by its access now.
CREATE TABLE document_accesses (
    doc_id     text   NOT NULL,
    source     text   NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
    tenant     text,
    acl_users  text[] NOT NULL,
    acl_groups text[] NOT NULL,
    -- a document's accesses, read by its id (a tenant is NULL for public documents)
    CONSTRAINT document_accesses_key UNIQUE NULLS NOT DISTINCT (doc_id, tenant, acl_users, acl_groups)
);

-- What is known of the past: the documents' access now and the access every change entry recorded.
INSERT INTO document_accesses (doc_id, source, tenant, acl_users, acl_groups)
SELECT doc_id, source, tenant, acl_users, acl_groups FROM documents
UNION
SELECT doc_id, source, tenant, acl_users, acl_groups FROM document_changes
ON CONFLICT DO NOTHING;

-- Kept by triggers on documents, so no writer can change an access without it being remembered.
CREATE FUNCTION document_accesses_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO document_accesses (doc_id, source, tenant, acl_users, acl_groups)
    SELECT DISTINCT w.doc_id, w.source, w.tenant, w.acl_users, w.acl_groups FROM written w
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER document_accesses_on_insert AFTER INSERT ON documents
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION document_accesses_kept();
CREATE TRIGGER document_accesses_on_update AFTER UPDATE ON documents
    REFERENCING NEW TABLE AS written FOR EACH STATEMENT EXECUTE FUNCTION document_accesses_kept();
