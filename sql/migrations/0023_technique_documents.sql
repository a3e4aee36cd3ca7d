-- 0023: the documents each ATT&CK technique labels, one row per (technique, document), kept by triggers
-- on documents (issue 33). The label leg and the voter legs of a hybrid search (sql/queries/serving.sql)
-- rank the documents labelled with a few techniques; through documents.techniques' GIN index they read
-- every such document (4,636 for one prose query of the real corpus, fifteen times more at a million
-- chunks). Here each technique's documents are in the order those legs favour (fewest labels first: a
-- document's vote is split over its labels), with the document's labels, so a leg reads at most
-- `label_candidates` of them per technique and scores them from this index alone, the caller's tenant and
-- source filter applied before the cut; only the best few are then read from documents.
CREATE TABLE technique_documents (
    technique text    NOT NULL,
    doc_id    text    NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    source    text    NOT NULL,
    tenant    text,
    labels    integer NOT NULL,
    techniques text[] NOT NULL,
    -- each technique's documents in the legs' order, read from the index alone
    PRIMARY KEY (technique, labels, doc_id) INCLUDE (source, tenant, techniques)
);
CREATE INDEX technique_documents_doc_idx ON technique_documents (doc_id);

INSERT INTO technique_documents (technique, doc_id, source, tenant, labels, techniques)
SELECT DISTINCT t.technique, d.doc_id, d.source, d.tenant, cardinality(d.techniques), d.techniques
FROM documents d CROSS JOIN LATERAL unnest(d.techniques) AS t(technique);

-- New documents (a publish).
CREATE FUNCTION technique_documents_added() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO technique_documents (technique, doc_id, source, tenant, labels, techniques)
    SELECT DISTINCT t.technique, a.doc_id, a.source, a.tenant, cardinality(a.techniques), a.techniques
    FROM added a CROSS JOIN LATERAL unnest(a.techniques) AS t(technique)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER technique_documents_on_insert AFTER INSERT ON documents
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION technique_documents_added();

-- Changed documents (a publish rewrites them; a folder's access settings move them between tenants): their
-- rows are made again. Removed documents take theirs with them (ON DELETE CASCADE).
CREATE FUNCTION technique_documents_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM technique_documents td USING changed c WHERE td.doc_id = c.doc_id;
    INSERT INTO technique_documents (technique, doc_id, source, tenant, labels, techniques)
    SELECT DISTINCT t.technique, c.doc_id, c.source, c.tenant, cardinality(c.techniques), c.techniques
    FROM changed c CROSS JOIN LATERAL unnest(c.techniques) AS t(technique)
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER technique_documents_on_update AFTER UPDATE ON documents
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION technique_documents_changed();

ANALYZE technique_documents;
