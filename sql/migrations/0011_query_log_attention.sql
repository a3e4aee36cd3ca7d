-- 0011: the attention log (serving/attention.py): each query-log row carries its flags
-- (zero_results, low_score:<top>, unknown_attack_ids:<ids>, weak_attack_match:<score>), so
-- `secrag tune report` can count and group them. Rows written before have none.
ALTER TABLE query_log ADD COLUMN attention text[] NOT NULL DEFAULT '{}';
