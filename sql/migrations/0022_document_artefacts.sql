-- 0022: exact artefact lookups (issue 32): the hashes, file names and paths the LOLDrivers, LOLBAS, GTFOBins
-- and HijackLibs records hold, normalised at publish (secrag/artefacts.py), for GET /v1/lookup and for the
-- search that pins the records holding a queried hash or file name. A publish rewrites a source's rows in
-- its own transaction (readers see the old version's rows or the new one's, never a mix; a failed publish
-- leaves the old ones); the rows of a removed document go with it. `key` is the matched form: lower case
-- where `folded` (hashes, Windows names and paths), as written otherwise (Unix names). `pattern` is an
-- anchored regular expression for a path with placeholders (%VERSION%, <version>), matched against
-- looked-up paths. The four sources' parser_version 2 republishes them once to fill the table.
CREATE TABLE document_artefacts (
    doc_id  text NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
    source  text NOT NULL,
    kind    text NOT NULL CHECK (kind IN ('md5', 'sha1', 'sha256', 'authentihash', 'imphash', 'rich_header_hash',
                                          'file_name', 'path')),
    field   text NOT NULL,
    value   text NOT NULL,
    key     text NOT NULL CHECK (key <> ''),
    folded  boolean NOT NULL,
    pattern text,
    PRIMARY KEY (doc_id, kind, field, key)
);
-- A lookup is one index probe per form of each value; a publish deletes its source's rows; the few paths
-- with placeholders are read apart from the rest.
CREATE INDEX document_artefacts_key_idx ON document_artefacts (key, folded);
CREATE INDEX document_artefacts_source_idx ON document_artefacts (source);
CREATE INDEX document_artefacts_pattern_idx ON document_artefacts (doc_id) WHERE pattern IS NOT NULL;
