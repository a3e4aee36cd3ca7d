-- 0007: per-source counts kept current by the pipeline, so /v1/stats reads a few rows instead of
-- counting and joining every chunk and vector on each call. Written in the transaction that publishes
-- a source and after each embedding pass; a model's rows go with the model.
CREATE TABLE source_counts (
    source      text PRIMARY KEY REFERENCES sources (name) ON DELETE CASCADE,
    documents   bigint NOT NULL,
    chunks      bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE source_model_counts (
    source           text NOT NULL REFERENCES sources (name) ON DELETE CASCADE,
    model_id         text NOT NULL REFERENCES embedding_models (model_id) ON DELETE CASCADE,
    vectors          bigint NOT NULL,  -- distinct vectors of the source's chunks (shared texts count once)
    chunks_embedded  bigint NOT NULL,  -- chunks that have a vector of the model
    PRIMARY KEY (source, model_id)
);
INSERT INTO source_counts (source, documents, chunks)
SELECT s.name,
       (SELECT count(*) FROM documents d WHERE d.source = s.name),
       (SELECT count(*) FROM chunks c WHERE c.source = s.name)
FROM sources s;
INSERT INTO source_model_counts (source, model_id, vectors, chunks_embedded)
SELECT c.source, e.model_id, count(DISTINCT e.content_hash), count(*)
FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash
GROUP BY c.source, e.model_id;
