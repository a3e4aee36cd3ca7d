-- Reads of the encoder training (pipeline/training): the store's own labelled knowledge.

-- name: procedure_examples
-- ATT&CK's procedure examples (public, every domain's procedures source): the example's text, its one
-- technique and its actor (the validation split holds back whole actors). First chunks only: the text as the
-- store embeds it is the chunk's, the label the document's.
SELECT d.doc_id, d.source, d.body, d.techniques[1] AS technique, d.metadata ->> 'actor_id' AS actor,
       c.title AS chunk_title, c.enriched_text AS chunk_text
FROM documents d
JOIN chunks c ON c.doc_id = d.doc_id AND c.ordinal = 0
WHERE d.source = ANY(%(procedure_sources)s) AND d.tenant IS NULL AND cardinality(d.techniques) = 1
ORDER BY d.doc_id

-- name: technique_texts
-- The techniques' own documents: name (as titled) and text, and their first chunk as the store embeds it.
SELECT d.doc_id, d.techniques[1] AS technique, d.title, d.body, c.title AS chunk_title, c.enriched_text AS chunk_text
FROM documents d
JOIN chunks c ON c.doc_id = d.doc_id AND c.ordinal = 0
WHERE d.source = ANY(%(technique_sources)s) AND d.tenant IS NULL
  AND d.metadata ->> 'kind' IN ('technique', 'sub-technique') AND cardinality(d.techniques) >= 1
ORDER BY d.doc_id

-- name: training_versions
-- The versions of the sources a training reads (its inputs' identity beside the data's hash).
SELECT name, current_version FROM sources WHERE name = ANY(%(sources)s) ORDER BY name

-- name: record_trained
-- A trained model, recorded (or recorded again: its figures) by pipeline/training/promotion.py. A promoted or
-- retired row keeps its status and promoted_at: only promote and rollback move those. Returns its status.
INSERT INTO trained_models (model_id, served_model, base_model, replaces, attack_version, data_digest, recipe,
                            validation, baseline, passed, status, trained_at, train_seconds)
VALUES (%(model_id)s, %(served_model)s, %(base_model)s, %(replaces)s, %(attack_version)s, %(data_digest)s,
        %(recipe)s, %(validation)s, %(baseline)s, %(passed)s, %(status)s, coalesce(%(trained_at)s, now()),
        %(train_seconds)s)
ON CONFLICT (model_id) DO UPDATE SET
    served_model = EXCLUDED.served_model, base_model = EXCLUDED.base_model, replaces = EXCLUDED.replaces,
    attack_version = EXCLUDED.attack_version, data_digest = EXCLUDED.data_digest, recipe = EXCLUDED.recipe,
    validation = EXCLUDED.validation, baseline = EXCLUDED.baseline, passed = EXCLUDED.passed,
    status = CASE WHEN trained_models.status IN ('promoted', 'retired') THEN trained_models.status
                  ELSE EXCLUDED.status END,
    trained_at = EXCLUDED.trained_at, train_seconds = EXCLUDED.train_seconds
RETURNING status

-- name: trained_models
-- Every trained model, newest first.
SELECT model_id, served_model, base_model, replaces, attack_version, data_digest, recipe, validation, baseline,
       passed, status, trained_at, promoted_at, train_seconds
FROM trained_models ORDER BY trained_at DESC, model_id

-- name: trained_model
SELECT model_id, served_model, base_model, replaces, attack_version, data_digest, recipe, validation, baseline,
       passed, status, trained_at, promoted_at, train_seconds
FROM trained_models WHERE model_id = %(model_id)s

-- name: promoted_trained_model
SELECT model_id, served_model, base_model, replaces, attack_version, data_digest, recipe, validation, baseline,
       passed, status, trained_at, promoted_at, train_seconds
FROM trained_models WHERE status = 'promoted'

-- name: lock_trained_models
-- One promotion or rollback at a time; the API's reads of the promoted row go on meanwhile.
LOCK TABLE trained_models IN SHARE ROW EXCLUSIVE MODE

-- name: chunks_lacking_model
-- The chunks of these sources, and how many of them have no vector of the model.
SELECT count(*) AS chunks,
       count(*) FILTER (WHERE NOT EXISTS (
           SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash AND e.model_id = %(model)s
       )) AS missing
FROM chunks c
WHERE c.source = ANY(%(sources)s::text[])

-- name: retire_promoted
-- The promoted row steps down (a promotion replaces it; it stays where a rollback returns to).
UPDATE trained_models SET status = 'retired' WHERE status = 'promoted' RETURNING model_id

-- name: promote_trained
UPDATE trained_models SET status = 'promoted', promoted_at = now() WHERE model_id = %(model_id)s

-- name: roll_back_promoted
-- The promoted row steps down and forgets its promotion, so no later rollback returns to it; its promotion
-- time is returned to find the one promoted before it.
WITH rolled AS (SELECT model_id, promoted_at FROM trained_models WHERE status = 'promoted' FOR UPDATE)
UPDATE trained_models t SET status = 'retired', promoted_at = NULL
FROM rolled WHERE t.model_id = rolled.model_id
RETURNING rolled.model_id, rolled.promoted_at

-- name: promoted_before
-- The retired model promoted last before a time: the one a rollback gives the sentence path back to.
SELECT model_id FROM trained_models
WHERE status = 'retired' AND promoted_at < %(before)s
ORDER BY promoted_at DESC, model_id
LIMIT 1

-- name: first_chunk_vectors
-- The vectors of one model of the documents' first chunks (the validation reads the stored vectors).
SELECT c.doc_id, e.vector
FROM chunks c
JOIN embeddings e ON e.content_hash = c.content_hash AND e.model_id = %(model)s
WHERE c.doc_id = ANY(%(doc_ids)s) AND c.ordinal = 0

-- name: model_chunk_vectors
-- Every public chunk of the sources with its vector of one model, its document's techniques and the example's
-- actor (the map verifier's training holds them as the API does: pipeline/training/verifier_data.py).
SELECT cv.source, cv.chunk_id, cv.doc_id, cv.vector, d.techniques, d.metadata ->> 'actor_id' AS actor
FROM chunk_vectors cv
JOIN documents d ON d.doc_id = cv.doc_id
WHERE cv.model_id = %(model)s AND cv.source = ANY(%(sources)s) AND cv.tenant IS NULL
ORDER BY cv.source, cv.chunk_id

-- name: narrative_texts
-- Text of the store that describes no procedure, the behaviour gate's negatives: ATT&CK's groups, software,
-- campaigns and mitigations and every other source's documents of the kinds named, public, at most `limit`
-- per source, in a stable order.
SELECT source, doc_id, body FROM (
    SELECT d.source, d.doc_id, d.body,
           row_number() OVER (PARTITION BY d.source ORDER BY md5(d.doc_id)) AS n
    FROM documents d
    WHERE d.tenant IS NULL AND d.source = ANY(%(sources)s)
      AND (d.metadata ->> 'kind' = ANY(%(kinds)s) OR d.source = ANY(%(whole_sources)s))
) picked
WHERE n <= %(limit)s
ORDER BY source, doc_id
