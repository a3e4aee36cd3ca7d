-- 0018: a user document says who sees it (issue 29; the rule of folders.yaml and `secrag ingest` is
-- secrag/access.py): a row that lists users or groups has a tenant. folders.yaml used to publish such a
-- row without a tenant, and the `visible` check served it to every caller; these CHECKs make the row
-- impossible whatever writes it.
-- Existing stores may hold such rows, so the constraints are added NOT VALID (new and changed rows are
-- checked at once) and validated below only when no row breaks them. A leftover document is visible to
-- no one (`visible` in sql/queries/serving.sql) until its folder is republished under the new rule.
ALTER TABLE documents ADD CONSTRAINT documents_acl_has_tenant
    CHECK (tenant IS NOT NULL OR (cardinality(acl_users) = 0 AND cardinality(acl_groups) = 0)) NOT VALID;
ALTER TABLE ingested_documents ADD CONSTRAINT ingested_documents_acl_has_tenant
    CHECK (tenant IS NOT NULL OR (cardinality(acl_users) = 0 AND cardinality(acl_groups) = 0)) NOT VALID;

-- The exact vector leg passes a chunk whose copied tenant is NULL as public without reading its
-- document; a leftover's chunks get '' instead, so that leg checks them against their document (the
-- copy is only ever compared with NULL: '' costs a lookup, never a wrong answer; the tenant trigger
-- rewrites it when the folder gets a tenant).
UPDATE chunk_vectors cv SET tenant = ''
FROM documents d
WHERE d.doc_id = cv.doc_id AND d.tenant IS NULL AND cv.tenant IS NULL
  AND (cardinality(d.acl_users) > 0 OR cardinality(d.acl_groups) > 0);

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM documents
                   WHERE tenant IS NULL AND (cardinality(acl_users) > 0 OR cardinality(acl_groups) > 0)) THEN
        ALTER TABLE documents VALIDATE CONSTRAINT documents_acl_has_tenant;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM ingested_documents
                   WHERE tenant IS NULL AND (cardinality(acl_users) > 0 OR cardinality(acl_groups) > 0)) THEN
        ALTER TABLE ingested_documents VALIDATE CONSTRAINT ingested_documents_acl_has_tenant;
    END IF;
END $$;
