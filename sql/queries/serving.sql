-- Reads of the serving layer (FastAPI + MCP). Every value is a bound parameter; the few pieces
-- composed with psycopg.sql are `{filters}` (the block below), `{tsq}` and `{ident_tsq}` (the query's
-- tsquery expressions), `{vec}` (the vector expression of
-- the active model's HNSW index, e.g. e.vector::vector(384)) and `{model}` (the partial index's
-- model_id literal, so the planner can match the index predicate).

-- name: session_privileges
-- What the API's login could do beyond reading; each column is one way out, and all must be false.
-- `held` is the login and every role it is a member of, directly or through others: it could SET ROLE
-- to any of them, so their attributes and rights count as its own, and membership in any role but
-- secrag_reader is a way out by itself (the owner's role above all). Every schema counts but the
-- system's (catalogs, TOAST, other sessions' temporary tables): a writable table anywhere is one.
WITH held AS (
    SELECT r.oid, r.rolname, r.rolsuper, r.rolcreaterole, r.rolcreatedb, r.rolreplication, r.rolbypassrls
    FROM pg_roles r
    WHERE pg_has_role(current_user, r.oid, 'MEMBER')
), schemas AS (
    SELECT n.oid, n.nspowner FROM pg_namespace n
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_(toast|temp_)'
), relations AS (
    SELECT c.oid, c.relkind, c.relowner FROM pg_class c WHERE c.relnamespace IN (SELECT oid FROM schemas)
)
SELECT bool_or(h.rolsuper) AS superuser,
       bool_or(h.rolcreaterole) AS createrole,
       bool_or(h.rolcreatedb) AS createdb,
       bool_or(h.rolreplication) AS replication,
       bool_or(h.rolbypassrls) AS bypassrls,
       bool_or(h.rolname NOT IN (current_user, %(reader)s)) AS member_of_roles,
       (EXISTS (SELECT 1 FROM relations c WHERE c.relowner IN (SELECT oid FROM held))
        OR EXISTS (SELECT 1 FROM schemas n WHERE n.nspowner IN (SELECT oid FROM held))
        OR EXISTS (SELECT 1 FROM pg_proc p
                   WHERE p.pronamespace IN (SELECT oid FROM schemas) AND p.proowner IN (SELECT oid FROM held))
        OR EXISTS (SELECT 1 FROM pg_largeobject_metadata l WHERE l.lomowner IN (SELECT oid FROM held))
        OR EXISTS (SELECT 1 FROM pg_database d
                   WHERE d.datname = current_database() AND d.datdba IN (SELECT oid FROM held))) AS owns_objects,
       EXISTS (SELECT 1 FROM relations c, held r
               WHERE (c.relkind IN ('r', 'p', 'v', 'm', 'f')
                      AND (has_table_privilege(r.oid, c.oid, 'DELETE, TRUNCATE, TRIGGER')
                           OR has_any_column_privilege(r.oid, c.oid, 'INSERT, UPDATE, REFERENCES')))
                  OR (c.relkind = 'S' AND has_sequence_privilege(r.oid, c.oid, 'USAGE, UPDATE'))
              ) AS writes_tables,
       (EXISTS (SELECT 1 FROM schemas n, held r WHERE has_schema_privilege(r.oid, n.oid, 'CREATE'))
        OR EXISTS (SELECT 1 FROM held r WHERE has_database_privilege(r.oid, current_database(), 'CREATE')))
           AS creates_objects
FROM held h

-- name: session_settings
-- Search statements are prepared after a few runs (psycopg); their filters are `param IS NULL OR ...`,
-- which a generic plan cannot prune, so always plan with the actual values. JIT compiles for longer
-- than these sub-100 ms statements run, and parallel workers cost more than they save for them: a
-- Gather starts processes per statement and takes the cores concurrent callers need (the label leg of
-- "Command and Scripting Interpreter: PowerShell" chose a parallel scan: 20.6 ms; without: 4.0 ms,
-- through the GIN index). The search settings hold for the session, so a search is one
-- statement with no transaction around it (hnsw.ef_search is set again only when a request needs
-- another value: search_ef).
SELECT set_config('statement_timeout', %(timeout)s, false),
       set_config('default_transaction_read_only', 'on', false),
       set_config('plan_cache_mode', 'force_custom_plan', false),
       set_config('jit', 'off', false),
       set_config('max_parallel_workers_per_gather', '0', false),
       set_config('hnsw.iterative_scan', %(iterative_scan)s, false),
       set_config('hnsw.max_scan_tuples', %(max_scan_tuples)s, false),
       set_config('hnsw.ef_search', %(ef_search)s, false),
       set_config('pg_trgm.similarity_threshold', %(trgm_threshold)s, false),
       set_config('pg_trgm.word_similarity_threshold', %(trgm_threshold)s, false)

-- name: search_ef
SELECT set_config('hnsw.ef_search', %(ef_search)s, false)

-- name: generic_plan
-- Sent before a statement in the same round trip (psycopg's pipeline: one transaction up to its sync), it has
-- that statement planned once for any values and the plan kept with the prepared statement: for the voter
-- legs on their own (4.5 -> 2.3 ms of PostgreSQL's CPU a filtered run, the same rows) and the page's fields,
-- whose plans the values do not change. Never for a statement with the vector leg: its generic plan sorts
-- every distance (hundreds of milliseconds).
SELECT set_config('plan_cache_mode', 'force_generic_plan', true)

-- name: visible
-- Whether the caller may see document d: public (no tenant, no users, no groups), or the caller's tenant
-- and a document that lists no users or groups, the caller's user or one of its groups. Every read of
-- documents uses it. A row with users or groups and no tenant (published before migration 0018 made it
-- impossible) is visible to no one: access fails closed.
((d.tenant IS NULL AND cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0)
 OR (d.tenant = %(tenant)s::text AND (
    (cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0)
    OR %(user)s::text = ANY(d.acl_users)
    OR d.acl_groups && %(groups)s::text[])))

-- name: filters
    (%(sources)s::text[] IS NULL OR c.source = ANY(%(sources)s::text[]))
AND (%(doc_ids)s::text[] IS NULL OR c.doc_id = ANY(%(doc_ids)s::text[]))
AND {document_filters}

-- name: document_filters
-- The filters (and the access check) that read the document d: `filters` is these and the chunk's own.
    (%(techniques)s::text[] IS NULL OR d.techniques && %(techniques)s::text[])
AND (%(platforms)s::text[] IS NULL OR d.platforms && %(platforms)s::text[])
-- An ATT&CK document's domain is its own (metadata.domain); any other's, those of its techniques (domain_techniques:
-- the ids of the asked domains).
AND (%(domains)s::text[] IS NULL OR CASE WHEN d.source = ANY(%(attack_sources)s::text[])
         THEN d.metadata->>'domain' = ANY(%(domains)s::text[])
         ELSE d.techniques && %(domain_techniques)s::text[] END)
AND (%(tags_any)s::text[] IS NULL OR d.tags && %(tags_any)s::text[])
AND (%(tags_all)s::text[] IS NULL OR d.tags @> %(tags_all)s::text[])
AND (%(updated_after)s::timestamptz IS NULL OR d.updated_at >= %(updated_after)s::timestamptz)
AND (%(updated_before)s::timestamptz IS NULL OR d.updated_at < %(updated_before)s::timestamptz)
AND (%(created_after)s::timestamptz IS NULL OR d.created_at >= %(created_after)s::timestamptz)
AND (%(created_before)s::timestamptz IS NULL OR d.created_at < %(created_before)s::timestamptz)
AND {visible}

-- name: tsq
(websearch_to_tsquery('english', %(fts_text)s) || websearch_to_tsquery('simple', %(ident_text)s))

-- name: ident_tsq
websearch_to_tsquery('simple', %(ident_text)s)

-- name: leg_vec
-- A search is one statement: a UNION ALL of the legs it needs (serving/search/statements.py), each leg a
-- parenthesised SELECT the planner plans on its own with the request's actual values: the vector leg
-- walks the HNSW index, the full-text leg the GIN index, the fuzzy leg the trigram index. Python fuses
-- the legs' rows by reciprocal rank (serving/search/fusion.py). Every leg returns the same columns: leg,
-- chunk_id, doc_id, source, title, identifiers, score, pool_fts, ident_hit, is_exact, vec_score. The tsquery
-- expressions (tsq and ident_tsq above) are inlined (not a CTE) so that the planner folds them to constants
-- and keeps the HNSW index order.
-- Nearest chunks by cosine; pool_fts ranks each of them lexically too (natural-language queries and
-- keyword queries of common words rank full text within this pool instead of across the corpus).
SELECT 'vec' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers,
       (1 - ({vec} <=> %(qvec)s::vector))::float8 AS score,
       CASE WHEN %(pool_fts)s AND c.tsv @@ {tsq} THEN ts_rank_cd(c.tsv, {tsq}, 32) END::float8 AS pool_fts,
       (%(ident_tier)s AND %(has_ident)s AND c.tsv @@ {ident_tsq}) AS ident_hit, false AS is_exact,
       NULL::float8 AS vec_score
FROM embeddings e
JOIN chunks c ON c.content_hash = e.content_hash
JOIN documents d ON d.doc_id = c.doc_id
WHERE e.model_id = {model} AND {filters}
ORDER BY {vec} <=> %(qvec)s::vector
LIMIT %(vec_k)s

-- name: leg_vec_exact
-- The same leg by exact distance over the filtered chunks, for filters that keep few of them (one
-- source, a list of documents): an HNSW scan would walk thousands of neighbours to find k that pass.
-- chunk_vectors (migration 0009) holds each chunk's vector with its source, document and tenant, so
-- the distances are taken over one source's rows without a join per chunk. The order of nn is exact (by
-- distance and chunk id: every filtered row's distance) or, for one source with its own HNSW index on
-- chunk_vectors (`secrag models index-source`), that index's order (a walk of the source's graph alone,
-- serving/search/statements.py vec_source). A public chunk passes
-- unless a document-level filter is set (doc_filters); any other is checked like every read (a chunk of
-- a document left with users and no tenant has the tenant '' here, migration 0018, so it is checked).
WITH nn AS MATERIALIZED (
    SELECT cv.chunk_id, ({cv_vec} <=> %(qvec)s::vector) AS distance
    FROM chunk_vectors cv
    WHERE cv.model_id = {model}
      AND (%(sources)s::text[] IS NULL OR cv.source = ANY(%(sources)s::text[]))
      AND (%(doc_ids)s::text[] IS NULL OR cv.doc_id = ANY(%(doc_ids)s::text[]))
      AND ((cv.tenant IS NULL AND NOT %(doc_filters)s)
           OR EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = cv.doc_id AND {document_filters}))
    ORDER BY {nn_order}
    LIMIT %(vec_k)s
)
SELECT 'vec' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, (1 - nn.distance)::float8 AS score,
       CASE WHEN %(pool_fts)s AND c.tsv @@ {tsq} THEN ts_rank_cd(c.tsv, {tsq}, 32) END::float8 AS pool_fts,
       (%(ident_tier)s AND %(has_ident)s AND c.tsv @@ {ident_tsq}) AS ident_hit, false AS is_exact,
       NULL::float8 AS vec_score
FROM nn JOIN chunks c ON c.chunk_id = nn.chunk_id
ORDER BY nn.distance, c.chunk_id

-- name: leg_vec_given
-- The same leg from the nearest chunks the API took itself: exact distances over the filtered sources' vectors
-- it holds in memory (serving/search/source_vectors.py; online sources, so public chunks), in their order, with
-- the filters and the access check applied as everywhere.
SELECT 'vec' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, n.sim AS score,
       CASE WHEN %(pool_fts)s AND c.tsv @@ {tsq} THEN ts_rank_cd(c.tsv, {tsq}, 32) END::float8 AS pool_fts,
       (%(ident_tier)s AND %(has_ident)s AND c.tsv @@ {ident_tsq}) AS ident_hit, false AS is_exact,
       NULL::float8 AS vec_score
FROM unnest(%(vec_ids)s::text[], %(vec_sims)s::float8[]) AS n(chunk_id, sim)
JOIN chunks c ON c.chunk_id = n.chunk_id
JOIN documents d ON d.doc_id = c.doc_id
WHERE {filters}
ORDER BY n.sim DESC, c.chunk_id

-- name: vector_indexed_sources
-- The sources with an HNSW index of their own on chunk_vectors, per model (`secrag models index-source`; a
-- partial index whose predicate names the model and the source): a search filtered to one of them walks it.
SELECT substring(indexdef FROM $$model_id = '([^']+)'::text$$) AS model_id,
       substring(indexdef FROM $$source = '([^']+)'::text$$) AS source
FROM pg_indexes
WHERE schemaname = 'public' AND tablename = 'chunk_vectors' AND strpos(indexdef, 'USING hnsw') > 0
  AND strpos(indexdef, 'source = ') > 0 AND strpos(indexdef, 'model_id = ') > 0

-- name: leg_fts
SELECT 'fts' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers,
       ts_rank_cd(c.tsv, {tsq}, 32)::float8 AS score, NULL::float8 AS pool_fts,
       (%(ident_tier)s AND %(has_ident)s AND c.tsv @@ {ident_tsq}) AS ident_hit, false AS is_exact,
       NULL::float8 AS vec_score
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.tsv @@ {tsq} AND {filters}
ORDER BY score DESC, c.chunk_id
LIMIT %(fts_k)s

-- name: leg_fts_vec
-- Strategy fts_then_vec: the best full-text candidates (candidates_k) with their cosine similarity, so
-- Python re-ranks them by vector (serving/search/fusion.py: then_vec). A candidate without a vector for the
-- active model cannot be re-ranked and is left out.
SELECT 'fts_vec' AS leg, f.chunk_id, f.doc_id, f.source, f.title, f.identifiers, f.score,
       NULL::float8 AS pool_fts, f.ident_hit, false AS is_exact,
       (1 - ({vec} <=> %(qvec)s::vector))::float8 AS vec_score
FROM (
    SELECT c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, c.content_hash,
           ts_rank_cd(c.tsv, {tsq}, 32)::float8 AS score,
           (%(ident_tier)s AND %(has_ident)s AND c.tsv @@ {ident_tsq}) AS ident_hit
    FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
    WHERE c.tsv @@ {tsq} AND {filters}
    ORDER BY score DESC, c.chunk_id
    LIMIT %(candidates_k)s
) f
JOIN embeddings e ON e.content_hash = f.content_hash AND e.model_id = {model}

-- name: leg_fuzzy
-- Titles of first chunks only (their own trigram index, migration 0010): trigram matching against long
-- identifier lists costs ~100 ms per query; the exact and
-- full-text legs cover identifiers, and rapidfuzz still re-scores candidates on them.
SELECT 'fuzzy' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers,
       greatest(similarity(c.title, %(fuzzy_text)s), word_similarity(%(fuzzy_text)s, c.title))::float8 AS score,
       NULL::float8 AS pool_fts, false AS ident_hit, false AS is_exact, NULL::float8 AS vec_score
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.ordinal = 0 AND (c.title %% %(fuzzy_text)s OR %(fuzzy_text)s <%% c.title) AND {filters}
ORDER BY score DESC, c.chunk_id
LIMIT %(fuzzy_k)s

-- name: leg_label
-- Documents labelled with a technique the query names in full (serving/search/technique_names.py), ranked by
-- the exact cosine similarity of their first chunk to the query: a rule tagged T1003.003 is found for
-- "OS Credential Dumping: NTDS" even when its text only says ntdsutil. First chunks only: the label is
-- the document's, and T1059.001 labels thousands of chunks (every chunk: 46 ms; first chunks: see below).
SELECT 'label' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, l.score, NULL::float8 AS pool_fts,
       false AS ident_hit, false AS is_exact, NULL::float8 AS vec_score
FROM (
    -- the first chunks of at most label_candidates documents per named technique, by cosine similarity
    SELECT cv.chunk_id, (1 - ({cv_vec} <=> %(qvec)s::vector))::float8 AS score
    FROM (SELECT DISTINCT k.doc_id FROM unnest(%(label_ids)s::text[]) AS v(technique) CROSS JOIN LATERAL ({labelled}) k) k
    JOIN chunk_vectors cv ON cv.chunk_id = k.doc_id || '#0' AND cv.model_id = {model}
    ORDER BY score DESC, cv.chunk_id
) l
JOIN chunks c ON c.chunk_id = l.chunk_id
JOIN documents d ON d.doc_id = c.doc_id
WHERE {filters}
ORDER BY l.score DESC, c.chunk_id
LIMIT %(vec_k)s

-- name: leg_neighbours
-- Documents labelled with the techniques of the query's nearest documents (kNN label transfer), for the
-- voter legs: `neighbours` (the nearest documents of any source the caller may see: a pasted Atomic test,
-- Elastic rule or CAPEC pattern finds its ATT&CK techniques through the rules and tests near it, whose
-- upstream labels name them, even when no technique text shares its words) and `procedures` (the
-- nearest ATT&CK procedure examples only: "APT29 has used ..." sentences in a threat report's register).
-- The leg's placeholders (serving/search/statements.py: voter_parts) name the leg, the sources whose documents
-- vote (NULL: any), and how many nearest chunks are read and documents vote. Each near document votes its
-- similarity, split over its labels (a group citing 60 techniques votes little for each), and half of a
-- sub-technique's vote goes to its parent; a labelled document scores the mean vote of its labels.
-- nn is voter_nearest (an HNSW walk of its own) or voter_nearest_pooled (the vector leg's pool).
WITH nn AS MATERIALIZED (
    {nearest}
), near AS (
    SELECT doc_id, max(sim) AS sim FROM nn GROUP BY doc_id ORDER BY sim DESC, doc_id LIMIT {voter_docs}
), votes AS MATERIALIZED (
    SELECT t.technique, sum(n.sim / cardinality(d.techniques) * t.share)::float8 AS vote
    FROM near n
    JOIN documents d ON d.doc_id = n.doc_id AND cardinality(d.techniques) > 0
    CROSS JOIN LATERAL (
        SELECT x, 1.0 FROM unnest(d.techniques) x
        UNION ALL
        SELECT split_part(x, '.', 1), 0.5 FROM unnest(d.techniques) x WHERE strpos(x, '.') > 0
    ) t(technique, share)
    GROUP BY t.technique
), candidates AS MATERIALIZED (
    -- At most label_candidates documents per voted technique (migration 0023), fewest labels first, each
    -- scored from the index (its labels are there): the mean vote of its labels. A document's rows share
    -- its labels, so it is told apart by its id alone (hashing the label arrays too cost a twentieth of the statement).
    SELECT k.doc_id, k.doc_id || '#0' AS chunk_id,
           ((SELECT sum(v.vote) FROM votes v WHERE v.technique = ANY(k.techniques)) / cardinality(k.techniques))::float8
               AS score
    FROM (SELECT DISTINCT ON (k.doc_id) k.doc_id, k.techniques FROM votes v CROSS JOIN LATERAL ({labelled}) k) k
), ranked AS MATERIALIZED (
    -- The best vec_k that pass the filters and the access check, read from documents best first until
    -- vec_k have passed (not every candidate).
    SELECT k.doc_id, k.score
    FROM (SELECT * FROM candidates ORDER BY score DESC, chunk_id) k
    WHERE EXISTS (
        SELECT 1 FROM documents d
        WHERE d.doc_id = k.doc_id
          AND (%(doc_ids)s::text[] IS NULL OR d.doc_id = ANY(%(doc_ids)s::text[]))
          AND {document_filters})
    ORDER BY k.score DESC, k.chunk_id
    LIMIT %(vec_k)s
)
SELECT {leg} AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, r.score,
       NULL::float8 AS pool_fts, false AS ident_hit, false AS is_exact, NULL::float8 AS vec_score
FROM ranked r
JOIN chunks c ON c.chunk_id = r.doc_id || '#0'  -- every document has its first chunk (the chunk's filters are the document's)
ORDER BY r.score DESC, c.chunk_id

-- name: voter_nearest
-- The voter leg's nearest chunks, one of three ways (the others' conditions are false once the parameters
-- are known): a walk of the whole store's HNSW graph, keeping the voting sources when they are named; or,
-- for named voting sources that are few enough or have an HNSW index of their own (`secrag models
-- index-source`), their chunk_vectors rows by distance (through that index, else exactly); or the nearest
-- the API took itself over the voting sources' vectors it holds in memory (serving/search/source_vectors.py:
-- the parameters `<prefix>_near_docs` and `<prefix>_near_sims`, NULL otherwise). A whole-graph
-- walk that keeps only a source holding 1.6 per cent of a million chunks read thousands of chunks (355 ms a
-- search); exact distances over its 16,000 rows take a few (serving/search/leg_shapes.py: voter_walks).
-- voter_exclude: sources that never vote in the walk, the ATT&CK sources of the domains a search did not ask
-- (serving/search/parameters.py: voter_exclusions).
(
SELECT c.doc_id, (1 - ({vec} <=> %(qvec)s::vector))::float8 AS sim
 FROM embeddings e
 JOIN chunks c ON c.content_hash = e.content_hash
 JOIN documents d ON d.doc_id = c.doc_id
 WHERE NOT {voter_own}::boolean AND e.model_id = {model} AND {visible}
   AND ({voter_sources}::text[] IS NULL OR c.source = ANY({voter_sources}::text[]))
   AND NOT c.source = ANY({voter_exclude}::text[])
 ORDER BY {vec} <=> %(qvec)s::vector
 LIMIT {voter_chunks}
) UNION ALL (  -- on one line: a search's legs are the statement's own UNION ALL lines
SELECT cv.doc_id, (1 - ({cv_vec} <=> %(qvec)s::vector))::float8 AS sim
 FROM chunk_vectors cv
 WHERE {voter_own}::boolean AND {voter_near_docs}::text[] IS NULL
   AND cv.model_id = {model} AND cv.source = ANY({voter_sources}::text[])
   AND (cv.tenant IS NULL OR EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = cv.doc_id AND {visible}))
 ORDER BY {cv_vec} <=> %(qvec)s::vector
 LIMIT {voter_chunks}
) UNION ALL (  -- the nearest held in memory
SELECT g.doc_id, g.sim FROM unnest({voter_near_docs}::text[], {voter_near_sims}::float8[]) AS g(doc_id, sim))

-- name: vector_pool
-- The vector leg's walk of the HNSW index, shared with the neighbours leg when nothing narrows either (no
-- filter, every source votes): one walk for both, as deep as the deeper needs (serving/search/leg_runs.py: pooled).
vector_pool AS MATERIALIZED (
    SELECT c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, c.tsv, ({vec} <=> %(qvec)s::vector) AS distance
    FROM embeddings e
    JOIN chunks c ON c.content_hash = e.content_hash
    JOIN documents d ON d.doc_id = c.doc_id
    WHERE e.model_id = {model} AND {filters}
    ORDER BY {vec} <=> %(qvec)s::vector
    LIMIT greatest(%(vec_k)s::int, %(nb_chunks)s::int)
)

-- name: leg_vec_pooled
-- leg_vec over the shared vector_pool.
SELECT 'vec' AS leg, p.chunk_id, p.doc_id, p.source, p.title, p.identifiers, (1 - p.distance)::float8 AS score,
       CASE WHEN %(pool_fts)s AND p.tsv @@ {tsq} THEN ts_rank_cd(p.tsv, {tsq}, 32) END::float8 AS pool_fts,
       (%(ident_tier)s AND %(has_ident)s AND p.tsv @@ {ident_tsq}) AS ident_hit, false AS is_exact,
       NULL::float8 AS vec_score
FROM vector_pool p
ORDER BY p.distance
LIMIT %(vec_k)s

-- name: voter_nearest_pooled
-- The neighbours leg's nearest chunks from the shared vector_pool (but those of voter_exclude, as voter_nearest).
SELECT p.doc_id, (1 - p.distance)::float8 AS sim FROM vector_pool p
WHERE NOT p.source = ANY({voter_exclude}::text[]) ORDER BY p.distance LIMIT {voter_chunks}

-- name: labelled
-- The documents technique v.technique labels that a leg ranks (the label leg, the voter legs): the caller's
-- tenant and the source filter applied from the index (the access check follows on the documents), fewest
-- labels first, at most label_candidates (search.yaml). Through documents.techniques a common technique
-- read thousands of documents per search, and fifteen times more in a store of a million chunks.
SELECT td.doc_id, td.techniques FROM technique_documents td
WHERE td.technique = v.technique
  AND (td.tenant IS NULL OR td.tenant = %(tenant)s::text)
  AND (%(sources)s::text[] IS NULL OR td.source = ANY(%(sources)s::text[]))
ORDER BY td.labels, td.doc_id
LIMIT %(label_candidates)s

-- name: leg_exact
-- The document named by an exact identifier (exact) and, for a parent technique, its sub-techniques.
SELECT 'exact' AS leg, c.chunk_id, c.doc_id, c.source, c.title, c.identifiers, 1.0::float8 AS score,
       NULL::float8 AS pool_fts, (%(ident_tier)s AND %(has_ident)s AND c.tsv @@ {ident_tsq}) AS ident_hit,
       c.doc_id = ANY(%(exact_ids)s::text[]) AS is_exact, NULL::float8 AS vec_score
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE (c.doc_id = ANY(%(exact_ids)s::text[]) OR c.doc_id = ANY(%(child_ids)s::text[]))
  AND c.ordinal = 0 AND {filters}

-- name: lookup
-- GET /v1/lookup (and the search of a hash or file name): the documents the caller may see that hold one of
-- the looked-up values (migration 0022). Each value is tried in its forms (secrag/artefacts.py `probes`:
-- %(ords)s numbers the value, %(keys)s and %(folded)s are the form, %(paths)s whether it is a path), each one
-- probe of the key index; a path is also matched against the few stored paths with placeholders. Per value,
-- its records, those it names first (certutil.exe: LOLBAS's Certutil.exe before the HijackLibs DLLs it
-- loads), then by source and title, each with every field holding it, at most %(limit)s + 1 of them (the
-- one more tells that some were cut).
WITH asked AS (
    SELECT * FROM unnest(%(ords)s::int[], %(keys)s::text[], %(folded)s::bool[], %(paths)s::bool[])
        AS q(ord, key, folded, is_path)
), hits AS (
    SELECT q.ord, a.doc_id, a.kind, a.field, a.value
    FROM asked q JOIN document_artefacts a ON a.key = q.key AND a.folded = q.folded
    UNION
    SELECT q.ord, a.doc_id, a.kind, a.field, a.value
    FROM asked q JOIN document_artefacts a ON q.is_path AND a.pattern IS NOT NULL AND q.key ~ a.pattern
), records AS (
    SELECT h.ord, d.doc_id, d.source, d.title, d.url,
           array_agg(h.kind ORDER BY h.kind, h.field, h.value) AS kinds,
           array_agg(h.field ORDER BY h.kind, h.field, h.value) AS fields,
           array_agg(h.value ORDER BY h.kind, h.field, h.value) AS artefact_values,
           row_number() OVER (PARTITION BY h.ord
                              ORDER BY bool_or(lower(h.value) = lower(d.title)) DESC, d.source, d.title, d.doc_id) AS n
    FROM hits h JOIN documents d ON d.doc_id = h.doc_id
    WHERE {visible}
    GROUP BY h.ord, d.doc_id
)
SELECT ord, doc_id, source, title, url, kinds, fields, artefact_values FROM records
WHERE n <= %(limit)s + 1
ORDER BY ord, n

-- name: query_lexemes
-- The lexemes of a keyword query, to estimate from the column statistics how many chunks it matches.
SELECT tsvector_to_array(to_tsvector('english', %(fts_text)s)) AS words,
       tsvector_to_array(to_tsvector('simple', %(ident_text)s)) AS idents

-- name: lexeme_frequencies
-- The most common lexemes of chunks.tsv with the share of chunks holding each, and the share of
-- chunks per source (ANALYZE keeps both; no row before the table's first ANALYZE).
SELECT s.most_common_elems::text::text[] AS lexemes, s.most_common_elem_freqs AS freqs,
       greatest(c.reltuples, 0)::float8 AS chunks,
       src.most_common_vals::text::text[] AS sources, src.most_common_freqs AS source_freqs
FROM pg_stats s
JOIN pg_class c ON c.relname = s.tablename
JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = s.schemaname
LEFT JOIN pg_stats src ON src.schemaname = s.schemaname AND src.tablename = s.tablename AND src.attname = 'source'
WHERE s.schemaname = 'public' AND s.tablename = 'chunks' AND s.attname = 'tsv'

-- name: source_names
SELECT name FROM sources ORDER BY name

-- name: source_facts
-- What a plan needs of each source it cites: its category, kind and served version (no counts, no state).
SELECT name, category, kind, current_version FROM sources ORDER BY name

-- name: public_source_names
-- Online sources: a search may filter by them whoever asks (user folders are checked per caller).
SELECT name FROM sources WHERE kind <> 'user_folder' ORDER BY name

-- name: result_rows
-- Display fields of one page of results (snippets are costly, so only for the page).
SELECT c.chunk_id, d.url, d.techniques, d.platforms,
       CASE WHEN d.source = ANY(%(attack_sources)s::text[]) THEN array_remove(ARRAY[d.metadata->>'domain'], NULL)
            ELSE ARRAY(SELECT DISTINCT m.domain FROM mitre_techniques m WHERE m.id = ANY(d.techniques) ORDER BY 1)
       END AS domains,
       c.char_start, c.char_end, c.heading, c.pages, d.media_type,
       CASE WHEN %(with_metadata)s THEN d.metadata END AS metadata,
       CASE WHEN %(with_text)s THEN left(c.text, %(max_text_chars)s) END AS text,
       CASE WHEN %(with_snippets)s THEN ts_headline('english', c.text, {tsq},
            'MaxFragments=2, MinWords=8, MaxWords=30, StartSel=<mark>, StopSel=</mark>') END AS snippet
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.chunk_id = ANY(%(ids)s::text[])
  AND {visible}

-- name: known_sources
SELECT s.name
FROM sources s
WHERE s.kind <> 'user_folder' OR EXISTS (
    SELECT 1 FROM documents d
    WHERE d.source = s.name
      AND {visible})
ORDER BY s.name

-- name: coverage
-- POST /v1/coverage in one statement. The asked techniques: those given, those a group, software or
-- campaign uses (its ATT&CK procedure examples and the techniques its ATT&CK document lists), or the active
-- techniques of a tactic whose ATT&CK document names one of the platforms (any, when none is given); folded into
-- their parents when asked (a parent then counts its sub-techniques' labels). Per asked technique, kind and
-- source (and, for detections, Sigma logsource): how many documents the caller may see are labelled with it,
-- and the first %(top)s of them by title.
-- Which source fills which kind is serving/coverage/kinds.py's (%(kind_sources)s, %(kinds)s); of ATT&CK's own
-- documents only its mitigations count. An actor's and a tactic's techniques are the asked domain's: read in its
-- technique and procedure sources (%(attack_source)s, %(procedures_source)s).
WITH given AS (
    SELECT upper(t) AS technique FROM unnest(%(techniques)s::text[]) AS t
    UNION
    SELECT t FROM documents d CROSS JOIN LATERAL unnest(d.techniques) AS t
    WHERE %(actor)s::text IS NOT NULL
      AND ((d.source = %(procedures_source)s AND d.metadata->>'actor_id' = %(actor)s::text)
           OR d.doc_id = %(attack_source)s || ':' || %(actor)s::text)
      AND {visible}
    UNION
    SELECT m.id FROM mitre_techniques m JOIN documents d ON d.doc_id = %(attack_source)s || ':' || m.id
    WHERE %(tactic)s::text = ANY(m.tactics) AND NOT m.revoked AND NOT m.deprecated
      AND (%(platforms)s::text[] IS NULL OR d.platforms && %(platforms)s::text[])
      AND {visible}
),
asked AS (
    SELECT DISTINCT CASE WHEN %(fold)s THEN split_part(technique, '.', 1) ELSE technique END AS technique
    FROM given
),
labels AS (
    SELECT technique AS label, technique FROM asked
    UNION
    SELECT m.id, a.technique FROM mitre_techniques m JOIN asked a
      ON %(fold)s AND m.id LIKE a.technique || '.%%'
),
counted AS (
    SELECT DISTINCT l.technique, k.kind, d.source, d.doc_id, d.title,
           CASE WHEN k.kind = 'detections' THEN d.metadata->'logsource' END AS logsource
    FROM documents d
    JOIN unnest(%(kind_sources)s::text[], %(kinds)s::text[]) AS k(source, kind) ON k.source = d.source
    CROSS JOIN LATERAL unnest(d.techniques) AS dt(label)
    JOIN labels l ON l.label = dt.label
    -- the source test beside the join lets the planner read the labels' index once (a bitmap AND with the sources),
    -- not once per kind source
    WHERE d.techniques && (SELECT array_agg(label) FROM labels) AND d.source = ANY(%(kind_sources)s::text[])
      AND (d.source <> ALL(%(attack_sources)s::text[]) OR d.metadata->>'kind' = 'mitigation')
      AND {visible}
)
SELECT a.technique, c.kind, c.source, c.logsource, count(c.doc_id) AS n,
       (array_agg(c.doc_id ORDER BY c.title, c.doc_id) FILTER (WHERE c.doc_id IS NOT NULL))[1:%(top)s] AS doc_ids,
       (array_agg(c.title ORDER BY c.title, c.doc_id) FILTER (WHERE c.doc_id IS NOT NULL))[1:%(top)s] AS titles
FROM asked a LEFT JOIN counted c ON c.technique = a.technique
GROUP BY a.technique, c.kind, c.source, c.logsource
ORDER BY a.technique, c.kind, c.source, c.logsource

-- name: coverage_analytics
-- POST /v1/coverage's second statement: ATT&CK's analytics of the asked techniques (as the coverage statement
-- gave them; a folded parent gathers its sub-techniques'), on the asked platforms (any when none), with the
-- log sources each needs. Analytics are documents of %(detections_source)s of kind analytic.
WITH asked AS (
    SELECT unnest(%(techniques)s::text[]) AS technique
),
labels AS (
    SELECT technique AS label, technique FROM asked
    UNION
    SELECT m.id, a.technique FROM mitre_techniques m JOIN asked a
      ON %(fold)s AND m.id LIKE a.technique || '.%%'
)
SELECT DISTINCT l.technique, d.doc_id, d.metadata->>'strategy' AS strategy, d.metadata->'platforms' AS platforms,
       d.metadata->'log_sources' AS log_sources
FROM documents d
CROSS JOIN LATERAL unnest(d.techniques) AS dt(label)
JOIN labels l ON l.label = dt.label
WHERE d.source = %(detections_source)s AND d.metadata->>'kind' = 'analytic'
  AND d.techniques && (SELECT array_agg(label) FROM labels)
  AND (%(platforms)s::text[] IS NULL OR d.platforms && %(platforms)s::text[])
  AND {visible}
ORDER BY l.technique, d.doc_id

-- name: coverage_holdings
-- What the store's public rule sets and telemetry schemas hold, as the log-source mapping names it
-- (serving/coverage/log_sources.yaml): the detections of %(detection_sources)s grouped by their Sigma logsource,
-- Elastic index patterns and Splunk data sources, and the doc ids of the schemas of %(schema_sources)s.
-- Store-wide: read once per data version (serving/coverage/holdings.py).
SELECT d.source, NULL AS doc_id, d.metadata->'logsource' AS logsource, d.metadata->'index' AS index,
       d.metadata->'data_source' AS data_sources, count(*) AS n
FROM documents d
WHERE d.source = ANY(%(detection_sources)s::text[]) AND d.tenant IS NULL
  AND (d.metadata ? 'logsource' OR d.metadata ? 'index' OR d.metadata ? 'data_source')
GROUP BY d.source, d.metadata->'logsource', d.metadata->'index', d.metadata->'data_source'
UNION ALL
SELECT d.source, d.doc_id, NULL, NULL, NULL, 1
FROM documents d
WHERE d.source = ANY(%(schema_sources)s::text[]) AND d.tenant IS NULL

-- name: technique_names
SELECT id, full_name FROM mitre_techniques WHERE NOT revoked AND NOT deprecated

-- name: technique_tactics
-- Each active technique's tactics (short names), which a map reports beside its techniques.
SELECT id, tactics FROM mitre_techniques WHERE NOT revoked AND NOT deprecated

-- name: technique_examples
-- How many public ATT&CK procedure examples each technique has (one per group, software or campaign that uses
-- it): the prior of the map's report-level decision (serving/mapping/decision.py).
SELECT d.techniques[1] AS technique, count(*) AS examples
FROM documents d
WHERE d.source = ANY(%(procedure_sources)s::text[]) AND d.tenant IS NULL AND cardinality(d.techniques) = 1
GROUP BY 1

-- name: layer_technique_states
-- Which of a Navigator layer's technique ids the store's ATT&CK has, and whether each is revoked or deprecated.
SELECT id, revoked, deprecated FROM mitre_techniques WHERE id = ANY(%(ids)s::text[])

-- name: layer_domain_tactics
-- The tactics (short names) of an ATT&CK domain's active techniques: those an entry of a layer of that domain
-- may name.
SELECT DISTINCT tactic FROM mitre_techniques, unnest(tactics) AS tactic
WHERE domain = %(domain)s AND NOT revoked AND NOT deprecated

-- name: technique_ids
SELECT id FROM mitre_techniques ORDER BY id

-- name: technique_domains
-- Each technique's ATT&CK domain (migration 0027), retired ones too: what answers naming a technique say, and the
-- techniques a search's `domains` filter keeps.
SELECT id, domain FROM mitre_techniques ORDER BY id

-- name: active_model
SELECT model_id, dimensions FROM embedding_models WHERE active

-- name: promoted_sentence_model
-- The model whose vectors serve the sentence path when a trained one is promoted (migration 0026); no row: the
-- general model serves it.
SELECT served_model FROM trained_models WHERE status = 'promoted'

-- name: schema_version
SELECT coalesce(max(version), 0) FROM schema_migrations

-- name: replica_lag
-- Whether this server is a standby, and how far its replayed data is behind the primary (serving/access/replica.py).
-- A standby whose WAL receiver streams and has replayed all it received misses nothing it knows of: lag 0,
-- however long ago the primary last committed (an idle primary). Otherwise the lag is the age of the last
-- replayed transaction, NULL before the first one; a standby that lost its primary keeps ageing.
SELECT pg_is_in_recovery() AS standby,
       CASE
           WHEN NOT pg_is_in_recovery() THEN 0.0
           WHEN EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE pid IS NOT NULL)
                AND pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
           ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8
       END AS lag_seconds

-- name: documents_by_id
SELECT d.doc_id, d.source, d.source_version, d.title, d.url, d.body, d.metadata, d.techniques, d.platforms,
       d.tags, d.created_at, d.updated_at, d.media_type,
       (SELECT array_agg(c.chunk_id ORDER BY c.ordinal) FROM chunks c WHERE c.doc_id = d.doc_id) AS chunk_ids
FROM documents d
WHERE d.doc_id = ANY(%(ids)s::text[])
  AND {visible}

-- name: chunks_by_id
SELECT c.chunk_id, c.doc_id, c.source, c.ordinal, c.title, c.text, c.enriched_text, c.identifiers,
       c.char_start, c.char_end, c.heading, c.pages, d.media_type
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.chunk_id = ANY(%(ids)s::text[])
  AND {visible}

-- name: map_chunks
-- The technique documents' chunks a map cites (serving/mapping/held_path.py), with the display fields a
-- search result has.
SELECT c.chunk_id, c.doc_id, c.source, c.title, d.url, d.techniques, d.platforms,
       c.char_start, c.char_end, c.heading, c.pages, d.media_type
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.chunk_id = ANY(%(ids)s::text[])
  AND {visible}

-- name: upstream_records
-- The documents' upstream coordinates and their stored upstream form (migration 0013; none for user
-- folders and documents published before it).
SELECT d.doc_id, d.source, d.source_version, d.upstream_path, s.upstream, s.kind, s.tracking,
       r.media_type AS raw_media_type, r.whole_file AS raw_whole_file, r.size AS raw_size, r.raw
FROM documents d JOIN sources s ON s.name = d.source
LEFT JOIN document_raw r ON r.doc_id = d.doc_id
WHERE d.doc_id = ANY(%(ids)s::text[])
  AND {visible}

-- name: sources_list
-- With each source's state, derived from its last finished refresh attempt (the view source_status,
-- which the Dagster checks read too), its last successful publish, and what its freshness is judged by
-- (secrag/freshness.py, as the Dagster check judges it). No error text: the kind only.
SELECT s.name, s.kind, s.description, s.category, s.upstream, s.branch, s.tracking, s.current_version,
       s.last_seen_version, s.last_check_at, s.last_sync_at, s.record_count, st.state, st.error_kind,
       st.attempt_at, st.attempt_status, st.attempt_phase, st.attempt_version, st.running_since,
       st.last_success_at, s.poll_interval, s.seen_since
FROM sources s JOIN source_status st ON st.name = s.name
WHERE s.name = ANY(%(names)s::text[])
ORDER BY s.name

-- name: changes_page
-- One page of the change history, newest first: the entries the caller may see by the access they recorded,
-- each with whether the caller may still see its document (`shown`; an entry never outlives the caller's right
-- to the document): a live document by its access now, a removed one by every access it ever had (migration
-- 0025), so narrowing a folder before removing a file keeps the file's entries from those who lost it. The
-- page is cut before that second check, so the newest entries come from the primary key in order.
SELECT c.id, c.source, c.doc_id, c.title, c.change, c.old_version, c.new_version, c.changed_at,
       CASE WHEN EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = c.doc_id)
            THEN NOT EXISTS (SELECT 1 FROM documents d WHERE d.doc_id = c.doc_id AND ({visible}) IS NOT TRUE)
            ELSE NOT EXISTS (SELECT 1 FROM document_accesses d WHERE d.doc_id = c.doc_id AND ({visible}) IS NOT TRUE)
       END AS shown
FROM (
    SELECT d.id, d.source, d.doc_id, d.title, d.change, d.old_version, d.new_version, d.changed_at
    FROM document_changes d
    WHERE (%(sources)s::text[] IS NULL OR d.source = ANY(%(sources)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR d.changed_at > %(since)s::timestamptz)
      AND (%(before)s::bigint IS NULL OR d.id < %(before)s::bigint)
      AND {visible}
    ORDER BY d.id DESC
    LIMIT %(limit)s
) c
ORDER BY c.id DESC

-- name: version_published_at
-- When one of the sources published this version (GET /v1/changes?since=<version>).
SELECT max(finished_at) AS published_at FROM source_versions
WHERE version = %(version)s AND status = 'published' AND source = ANY(%(sources)s::text[])

-- name: stats_documents
-- The live counts (user folders) count only the documents the caller may see (the visible check).
SELECT d.source, count(*) FROM documents d WHERE d.source = ANY(%(names)s::text[]) AND {visible} GROUP BY d.source

-- name: stats_chunks
SELECT c.source, count(*)
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.source = ANY(%(names)s::text[]) AND {visible}
GROUP BY c.source

-- name: stats_embeddings
-- Distinct vectors per source and model (chunks sharing a text share a vector; counted once).
SELECT x.source, x.model_id, count(*)
FROM (SELECT DISTINCT c.source, e.model_id, e.content_hash
      FROM chunks c JOIN embeddings e ON e.content_hash = c.content_hash JOIN documents d ON d.doc_id = c.doc_id
      WHERE c.source = ANY(%(names)s::text[]) AND {visible}) x
GROUP BY x.source, x.model_id

-- name: stats_embedded_chunks
-- Chunks of each source that have a vector for the active model.
SELECT c.source, count(*)
FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
WHERE c.source = ANY(%(names)s::text[]) AND {visible}
  AND EXISTS (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash AND e.model_id = %(model)s)
GROUP BY c.source

-- name: stats_models
-- `vectors` is kept by the pipeline (migration 0008).
SELECT model_id, dimensions, active, vectors FROM embedding_models ORDER BY model_id

-- name: stats_counts
-- Kept by the pipeline (migration 0007): online sources read these instead of counting.
SELECT source, documents, chunks FROM source_counts WHERE source = ANY(%(names)s::text[])

-- name: stats_model_counts
SELECT source, model_id, vectors, chunks_embedded FROM source_model_counts WHERE source = ANY(%(names)s::text[])

-- name: stats_versions
SELECT source, status, count(*), max(finished_at)
FROM source_versions WHERE source = ANY(%(names)s::text[])
GROUP BY source, status

-- name: stats_freshness
SELECT name, current_version, last_sync_at, last_check_at,
       extract(epoch FROM now() - last_sync_at)::float8 AS sync_age_s
FROM sources WHERE name = ANY(%(names)s::text[])

-- name: stats_index_sizes
SELECT c.relname, t.relname, pg_relation_size(c.oid)
FROM pg_index i
JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_class t ON t.oid = i.indrelid
JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'public' AND t.relname = ANY(%(tables)s::text[])
ORDER BY c.relname

-- name: stats_table_sizes
SELECT t.relname, pg_total_relation_size(t.oid)
FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'public' AND t.relname = ANY(%(tables)s::text[]) AND t.relkind = 'r'
ORDER BY t.relname

-- name: log_query
INSERT INTO query_log (endpoint, query_type, query_text, top_score, result_count, latency_ms, details, attention)
VALUES (%(endpoint)s, %(query_type)s, %(query_text)s, %(top_score)s, %(result_count)s, %(latency_ms)s,
        %(details)s, %(attention)s)

-- name: data_version
-- Changes with every publish and every embedding pass (both rewrite source_counts, migration 0007).
SELECT coalesce(max(updated_at)::text, '') || '/' || count(*) FROM source_counts

-- name: spelling_vocabulary
-- The words of public document titles (technique names, rule titles, tools, artefacts) and the field
-- names of the telemetry schemas (category schema), with how many documents or chunks hold each: what
-- a misspelt query word is corrected to (serving/search/spelling.py).
SELECT word, ndoc FROM ts_stat(
    'SELECT to_tsvector(''simple'', c.title) FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
     WHERE c.ordinal = 0
       AND d.tenant IS NULL AND cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0')
UNION ALL
SELECT word, ndoc FROM ts_stat(
    'SELECT to_tsvector(''simple'', c.identifiers) FROM chunks c
     JOIN documents d ON d.doc_id = c.doc_id JOIN sources s ON s.name = d.source
     WHERE s.category = ''schema''
       AND d.tenant IS NULL AND cardinality(d.acl_users) = 0 AND cardinality(d.acl_groups) = 0')

-- name: absent_words
-- The query words no chunk the caller may see contains (a GIN lookup each; only words missing from the
-- title vocabulary are asked, so rarely a common one). Stop words have no lexeme and are never absent.
SELECT w FROM unnest(%(words)s::text[]) AS w
WHERE numnode(plainto_tsquery('english', w)) > 0
  AND NOT EXISTS (
    SELECT 1 FROM chunks c JOIN documents d ON d.doc_id = c.doc_id
    WHERE c.tsv @@ plainto_tsquery('english', w) AND {visible})

-- name: tuned_values
-- The values approved by `secrag tune apply` for one setting, by query type (serving/feedback/tuned_plans.py, re-read
-- every few seconds; `secrag tune` proposes from them): a row overrides the plans file for its query type.
SELECT query_type, value FROM tuned_value WHERE setting = %(setting)s ORDER BY query_type

-- name: source_data_versions
-- Each source's data version: its row of source_counts, which every publish and every embedding pass of the
-- source rewrites (migration 0007). The vectors the API holds in memory are used only at this version.
SELECT source, updated_at::text || '/' || chunks AS version FROM source_counts

-- name: source_vectors
-- One online source's public vectors of one model in pgvector's binary form, with the source's data version
-- (as source_data_versions reads it) in the same statement (serving/search/source_vectors.py). No row: the source has no counts yet; one row
-- without a chunk: no vectors. At most max_rows (one more than the API holds tells it the source is too large).
-- Each chunk comes with its document's techniques: the map's votes read them (secrag/mapping/candidates.py).
-- In chunk id order, so equal similarities fall alike on every store (a snapshot's replica has its own heap order).
SELECT v.version, cv.chunk_id, cv.doc_id, vector_send(cv.vector) AS vector, cv.techniques
FROM (SELECT updated_at::text || '/' || chunks AS version FROM source_counts WHERE source = %(source)s) v
LEFT JOIN LATERAL (
    SELECT cv.chunk_id, cv.doc_id, cv.vector, d.techniques FROM chunk_vectors cv
    JOIN documents d ON d.doc_id = cv.doc_id
    WHERE cv.model_id = %(model)s AND cv.source = %(source)s AND cv.tenant IS NULL
    ORDER BY cv.chunk_id
    LIMIT %(max_rows)s
) cv ON true
