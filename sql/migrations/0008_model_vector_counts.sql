-- 0008: each model's vector count, kept by the pipeline after every embedding pass (counting the
-- embeddings table on each /v1/stats call cost 14 ms of its 23 ms on the full snapshot).
ALTER TABLE embedding_models ADD COLUMN vectors bigint NOT NULL DEFAULT 0;
UPDATE embedding_models m SET vectors = (SELECT count(*) FROM embeddings e WHERE e.model_id = m.model_id);
