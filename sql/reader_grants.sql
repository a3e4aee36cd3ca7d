-- What the API's login (secrag_reader) may read: the one list of its rights. `secrag db migrate` applies
-- this file after the migrations, every time, in one transaction: it takes every right on secrag's
-- tables away and grants back exactly the columns below (no table-wide grant, no default privileges
-- since migration 0017), so a table or column added by a migration stays unreadable until it is listed
-- here. tests/integration/secrag/db/test_reader_grants.py compares what the reader can read with this
-- list. Keep one `GRANT SELECT (columns) ON table TO secrag_reader;` per table, columns in table order.
-- Never listed: query_log (secrag_querylog writes it), tuning_audit (who tuned what), ingested_documents
-- (private files; their published documents are read through the access check), and any column the
-- API does not serve.
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM secrag_reader;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM secrag_reader;
REVOKE ALL ON SCHEMA public FROM secrag_reader;
GRANT USAGE ON SCHEMA public TO secrag_reader;

-- The corpus: every read of these checks the caller's access (sql/queries/serving.sql `visible`).
GRANT SELECT (doc_id, source, source_version, title, url, body, metadata, techniques, platforms, tags,
              tenant, acl_users, acl_groups, created_at, updated_at, upstream_path, media_type)
    ON documents TO secrag_reader;
GRANT SELECT (chunk_id, doc_id, source, ordinal, title, text, enriched_text, identifiers, content_hash, tsv,
              char_start, char_end, heading, pages)
    ON chunks TO secrag_reader;
GRANT SELECT (content_hash, model_id, vector) ON embeddings TO secrag_reader;
GRANT SELECT (chunk_id, model_id, doc_id, source, tenant, vector) ON chunk_vectors TO secrag_reader;
GRANT SELECT (doc_id, media_type, whole_file, size, raw) ON document_raw TO secrag_reader;
-- Artefact identifiers (migration 0022; GET /v1/lookup), read joined to their documents.
GRANT SELECT (doc_id, source, kind, field, value, key, folded, pattern) ON document_artefacts TO secrag_reader;
-- The documents each technique labels (migration 0023; the label and voter legs), read joined to their documents.
GRANT SELECT (technique, doc_id, source, tenant, labels, techniques) ON technique_documents TO secrag_reader;

-- Sources and their refreshes (GET /v1/sources, /v1/stats). Column by column: error details and
-- bookkeeping the pipeline keeps there are the owner's.
GRANT SELECT (name, kind, description, category, upstream, branch, tracking, current_version,
              last_check_at, last_seen_version, last_sync_at, record_count, poll_interval, seen_since)
    ON sources TO secrag_reader;
-- Never error_detail: the full error text (paths, URLs, driver messages) is the operators' alone.
GRANT SELECT (id, source, version, started_at, finished_at, status, phase, error_kind)
    ON source_versions TO secrag_reader;
-- A source's state, derived from its attempts (migration 0019); the view holds no error text.
GRANT SELECT (name, state, error_kind, attempt_id, attempt_status, attempt_phase, attempt_version, attempt_at,
              attempt_finished_at, running_since, last_success_at)
    ON source_status TO secrag_reader;
GRANT SELECT (source, documents, chunks, updated_at) ON source_counts TO secrag_reader;
-- The change history (GET /v1/changes), read through the access check like the documents.
GRANT SELECT (id, source, doc_id, title, change, old_version, new_version, changed_at, tenant, acl_users,
              acl_groups)
    ON document_changes TO secrag_reader;
-- Every access each document has had: an entry of a removed document is shown by the narrowest (0025).
GRANT SELECT (doc_id, tenant, acl_users, acl_groups) ON document_accesses TO secrag_reader;
GRANT SELECT (source, model_id, vectors, chunks_embedded) ON source_model_counts TO secrag_reader;

-- Reference data and settings the API reads.
GRANT SELECT (model_id, dimensions, active, vectors) ON embedding_models TO secrag_reader;
-- The technique lookup, with each technique's ATT&CK domain (migration 0027).
GRANT SELECT (id, full_name, tactics, revoked, deprecated, domain) ON mitre_techniques TO secrag_reader;
GRANT SELECT (setting, query_type, value) ON tuned_value TO secrag_reader;
GRANT SELECT (version) ON schema_migrations TO secrag_reader;
-- The trained sentence model in force (migration 0026; serving.sql promoted_sentence_model); not its lineage
-- or figures, the operators' (`secrag models trained`).
GRANT SELECT (model_id, served_model, status, promoted_at) ON trained_models TO secrag_reader;
