-- The `visible` check of every read tests tenant IS NULL AND cardinality(acl_users) = 0 AND
-- cardinality(acl_groups) = 0. Without statistics on those expressions the planner guesses each at
-- 0.5 % and expects one visible document in the store; it then reads every document and computes the
-- distance of every vector instead of walking the HNSW index (the neighbours leg: 370 ms of a 650 ms
-- search on a 65,000-chunk store, 35-60 ms with these statistics; bench/quality.py, docs/figures.md).
CREATE STATISTICS IF NOT EXISTS documents_access ON tenant, (cardinality(acl_users)), (cardinality(acl_groups))
    FROM documents;
ANALYZE documents;
