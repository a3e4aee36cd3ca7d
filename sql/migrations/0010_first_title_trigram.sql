-- 0010: the fuzzy leg matches the titles of each document's first chunk only (leg_fuzzy: ordinal = 0),
-- so its trigram index now holds just those rows. On the full snapshot the planner then takes the
-- index instead of scanning every chunk: 'mimikats' 2 ms, a field name such as 'file.uid' (1,525
-- titles with "file") 244 -> 42 ms; field-name searches p50 33 -> 22 ms (bench/fields.py).
-- The trigram index on identifiers goes: no statement has matched identifiers by trigram since the
-- fuzzy leg left them (about 100 ms a query), and it cost 15 MB and every publish's writes.
CREATE INDEX chunks_first_title_trgm_idx ON chunks USING gin (title gin_trgm_ops) WHERE ordinal = 0;
DROP INDEX chunks_title_trgm_idx;
DROP INDEX chunks_identifiers_trgm_idx;
