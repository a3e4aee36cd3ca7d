-- 0024: no row without a tenant lists users or groups any more, and the CHECKs of 0018 are VALID (issue 43).
-- 0018 left such rows (published by folders.yaml before the rule) in place, visible to no one through
-- `visible`; but a model added later copied their NULL tenant into chunk_vectors (its triggers copy
-- documents.tenant), and the legs that pass a NULL copy as public without reading the document (the
-- voter legs' and the exact vector leg's reads of chunk_vectors) let those hidden documents vote and rank.
-- Nothing in the store says which tenant such a row was meant for (folders.yaml said none), so none is
-- guessed: each is refused. Its document is unpublished (its chunks, vectors, artefacts and technique rows
-- go with it; the folder's next publish, under a folders.yaml that names a tenant, brings it back), and a
-- one-time document stored that way is removed (`secrag ingest add` it again with --tenant). One WARNING a
-- row says which, and the migration runner logs it (secrag/db/migrations.py).
-- The change feed keeps the entries it recorded for them: entries carry the access they were recorded
-- with, and users without a tenant pass no caller's check.
DO $$
DECLARE
    r record;
    touched text[] := '{}';
BEGIN
    FOR r IN SELECT name, filename, sha256, added_by, cardinality(acl_users) AS users,
                    cardinality(acl_groups) AS groups
             FROM ingested_documents
             WHERE tenant IS NULL AND (cardinality(acl_users) > 0 OR cardinality(acl_groups) > 0)
             ORDER BY name
    LOOP
        RAISE WARNING 'one-time document % (%, sha256 %, added by %) lists % user(s) and % group(s) but no tenant: '
                      'removed with its source ingested_%; add it again with `secrag ingest add FILE --name % --tenant T`',
                      r.name, r.filename, r.sha256, r.added_by, r.users, r.groups, r.name, r.name;
        DELETE FROM ingested_documents WHERE name = r.name;
        DELETE FROM documents WHERE source = 'ingested_' || r.name;
        touched := touched || ('ingested_' || r.name);
    END LOOP;

    FOR r IN SELECT doc_id, source, cardinality(acl_users) AS users, cardinality(acl_groups) AS groups
             FROM documents
             WHERE tenant IS NULL AND (cardinality(acl_users) > 0 OR cardinality(acl_groups) > 0)
             ORDER BY doc_id
    LOOP
        RAISE WARNING 'document % lists % user(s) and % group(s) but no tenant: unpublished; '
                      'give folder % a tenant in folders.yaml and publish it again',
                      r.doc_id, r.users, r.groups, r.source;
        DELETE FROM documents WHERE doc_id = r.doc_id;
        touched := touched || r.source;
    END LOOP;

    -- The counts of each source that lost documents, as a publish leaves them: its data version moves, so
    -- the API drops the responses and the source vectors it keeps under the old one.
    INSERT INTO source_counts (source, documents, chunks, updated_at)
    SELECT s.name,
           (SELECT count(*) FROM documents d WHERE d.source = s.name),
           (SELECT count(*) FROM chunks c WHERE c.source = s.name),
           now()
    FROM sources s WHERE s.name = ANY(touched)
    ON CONFLICT (source) DO UPDATE
    SET documents = EXCLUDED.documents, chunks = EXCLUDED.chunks, updated_at = EXCLUDED.updated_at;
    DELETE FROM source_model_counts WHERE source = ANY(touched);
    INSERT INTO source_model_counts (source, model_id, vectors, chunks_embedded)
    SELECT c.source, e.model_id, count(DISTINCT e.content_hash), count(*)
    FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash
    WHERE c.source = ANY(touched)
    GROUP BY c.source, e.model_id;
END $$;

ALTER TABLE documents VALIDATE CONSTRAINT documents_acl_has_tenant;
ALTER TABLE ingested_documents VALIDATE CONSTRAINT ingested_documents_acl_has_tenant;
