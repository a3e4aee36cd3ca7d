-- 0009: each chunk's vector per model, beside its source, document and tenant, for filtered vector search.
--
-- Vectors are keyed by (content hash, model) and shared by every chunk with that text, so the HNSW
-- index cannot see a chunk's source: a single-source filter either walked the index until enough
-- neighbours passed (pgvector's iterative scan; sigma 9 ms p50, capec 30 ms) or took exact distances
-- through a join per chunk (mitre_attack 32 ms). Exact distances over this table's rows of one source
-- cost 0.5-2.3 ms on the full snapshot (bench/filtered.py). The table is derived, never written by the
-- application: the triggers below keep it equal to chunks x embeddings, and deletes cascade from both.
CREATE TABLE chunk_vectors (
    chunk_id      text NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
    model_id      text NOT NULL,
    content_hash  text NOT NULL,
    doc_id        text NOT NULL,
    source        text NOT NULL,
    tenant        text,
    vector        vector NOT NULL,
    PRIMARY KEY (chunk_id, model_id),
    FOREIGN KEY (content_hash, model_id) REFERENCES embeddings (content_hash, model_id) ON DELETE CASCADE
);
ALTER TABLE chunk_vectors ALTER COLUMN vector SET STORAGE PLAIN;
CREATE INDEX chunk_vectors_model_source_idx ON chunk_vectors (model_id, source);
CREATE INDEX chunk_vectors_doc_idx ON chunk_vectors (doc_id);
CREATE INDEX chunk_vectors_embedding_idx ON chunk_vectors (content_hash, model_id);

INSERT INTO chunk_vectors (chunk_id, model_id, content_hash, doc_id, source, tenant, vector)
SELECT c.chunk_id, e.model_id, c.content_hash, c.doc_id, c.source, d.tenant, e.vector
FROM chunks c
JOIN documents d ON d.doc_id = c.doc_id
JOIN embeddings e ON e.content_hash = c.content_hash;

-- New chunks (a publish) take the vectors their text already has.
CREATE FUNCTION chunk_vectors_from_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chunk_vectors (chunk_id, model_id, content_hash, doc_id, source, tenant, vector)
    SELECT a.chunk_id, e.model_id, a.content_hash, a.doc_id, a.source, d.tenant, e.vector
    FROM added a
    JOIN documents d ON d.doc_id = a.doc_id
    JOIN embeddings e ON e.content_hash = a.content_hash
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_vectors_on_chunks AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION chunk_vectors_from_chunks();

-- New vectors (an embedding pass) reach every chunk with that text.
CREATE FUNCTION chunk_vectors_from_embeddings() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO chunk_vectors (chunk_id, model_id, content_hash, doc_id, source, tenant, vector)
    SELECT c.chunk_id, a.model_id, a.content_hash, c.doc_id, c.source, d.tenant, a.vector
    FROM added a
    JOIN chunks c ON c.content_hash = a.content_hash
    JOIN documents d ON d.doc_id = c.doc_id
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_vectors_on_embeddings AFTER INSERT ON embeddings
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION chunk_vectors_from_embeddings();

-- A folder's access settings move its documents between tenants: the copies follow at once.
CREATE FUNCTION chunk_vectors_tenant() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunk_vectors SET tenant = NEW.tenant WHERE doc_id = NEW.doc_id;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_vectors_on_tenant AFTER UPDATE OF tenant ON documents
    FOR EACH ROW WHEN (OLD.tenant IS DISTINCT FROM NEW.tenant) EXECUTE FUNCTION chunk_vectors_tenant();

-- The same for a vector rewritten in place (not done today; kept exact should it ever be).
CREATE FUNCTION chunk_vectors_vector() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE chunk_vectors SET vector = NEW.vector
    WHERE content_hash = NEW.content_hash AND model_id = NEW.model_id;
    RETURN NULL;
END $$;
CREATE TRIGGER chunk_vectors_on_vector AFTER UPDATE OF vector ON embeddings
    FOR EACH ROW EXECUTE FUNCTION chunk_vectors_vector();
