-- 0015: where each chunk sits in its document, for citations (serving: search results' `location`, plan
-- citations): characters [char_start, char_end) of the document body, the Markdown heading it falls
-- under, and for a PDF the 1-based pages it spans; and each document's media type (its upstream form's,
-- or its file's for user folders). Rows published before are filled when their source is next published
-- (pipeline/sources/records.py RECORD_FORMAT is part of every document hash).
ALTER TABLE chunks
    ADD COLUMN char_start integer CHECK (char_start >= 0),
    ADD COLUMN char_end integer CHECK (char_end >= char_start),
    ADD COLUMN heading text,
    ADD COLUMN pages integer[];
ALTER TABLE documents ADD COLUMN media_type text;
