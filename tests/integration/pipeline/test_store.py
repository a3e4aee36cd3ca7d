"""Atomic publish on a real PostgreSQL: diff by content hash, refusals, readers never see a mix."""

from __future__ import annotations

import dataclasses
import threading
import zlib

import psycopg
import pytest

from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Record, Skipped
from pipeline.store import Access, SourceRow, Store
from secrag import artefacts
from secrag.db import database
from secrag.files.package_data import sql_dir

LOOKUP = {"T1003": "OS Credential Dumping", "T1003.001": "OS Credential Dumping: LSASS Memory"}


def rec(i: int, body: str = "", **kw: object) -> Record:
    return Record(
        source="demo",
        upstream_id=f"r{i}",
        title=f"Rule {i}",
        body=body or f"Body of rule {i}",
        url=f"https://example.org/{i}",
        **kw,
    )  # type: ignore[arg-type]


@pytest.fixture
def store(db: psycopg.Connection) -> Store:
    s = Store(sql_dir())
    s.register_source(db, SourceRow(name="demo", kind="online", description="demo", tracking="commit"))
    return s


def publish(store: Store, db: psycopg.Connection, version: str, records: list[Record], **kw: object):
    return store.publish(
        db, source="demo", version=version, records=records, lookup=LOOKUP, chunking=ChunkConfig(), **kw
    )  # type: ignore[arg-type]


def test_first_publish_inserts_documents_and_chunks(store: Store, db: psycopg.Connection) -> None:
    records = [rec(i) for i in range(10)] + [
        rec(99, body="Detects T1003.001 via mimikatz.exe", techniques=("T1003.001",))
    ]
    result = publish(store, db, "v1", records, skipped=[Skipped("bad.yml", "invalid YAML")])
    assert (result.status, result.inserted, result.updated, result.deleted, result.skipped) == (
        "published",
        11,
        0,
        0,
        1,
    )
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 11
    row = db.execute("SELECT enriched_text, identifiers FROM chunks WHERE chunk_id = 'demo:r99#0'").fetchone()
    assert "T1003.001 OS Credential Dumping: LSASS Memory" in row[0]
    assert "mimikatz" in row[1].split() and "t1003" in row[1].split()
    src = db.execute(
        "SELECT current_version, st.state, record_count FROM sources JOIN source_status st USING (name) "
        "WHERE name = 'demo'"
    ).fetchone()
    assert src == ("v1", "ok", 11)
    version = db.execute(
        "SELECT status, records_inserted, records_skipped, details->'skipped_sample' FROM source_versions"
    ).fetchone()
    assert version == ("published", 11, 1, ["bad.yml: invalid YAML"])


def test_republish_diffs_by_content_hash(store: Store, db: psycopg.Connection) -> None:
    publish(store, db, "v1", [rec(i) for i in range(10)])
    created = db.execute("SELECT created_at FROM documents WHERE doc_id='demo:r1'").fetchone()[0]
    changed = [rec(i) for i in range(1, 10)] + [rec(1, body="new body"), rec(42)]
    changed = [r for r in changed if not (r.upstream_id == "r1" and r.body.startswith("Body"))]
    result = publish(store, db, "v2", changed)
    assert (result.inserted, result.updated, result.deleted, result.unchanged) == (1, 1, 1, 8)
    assert result.chunks_written == 2
    row = db.execute("SELECT body, source_version, created_at FROM documents WHERE doc_id='demo:r1'").fetchone()
    assert row == ("new body", "v2", created)
    assert db.execute("SELECT count(*) FROM documents WHERE doc_id='demo:r0'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM chunks WHERE doc_id='demo:r0'").fetchone()[0] == 0


def test_unchanged_republish_writes_nothing(store: Store, db: psycopg.Connection) -> None:
    publish(store, db, "v1", [rec(i) for i in range(5)])
    result = publish(store, db, "v2", [rec(i) for i in range(5)])
    assert (result.inserted, result.updated, result.deleted, result.unchanged, result.chunks_written) == (0, 0, 0, 5, 0)


def test_each_records_upstream_form_is_stored_compressed_and_follows_upstream_edits(
    store: Store, db: psycopg.Connection
) -> None:
    raw = "title: Rule 1\n# an upstream comment\ndetection: {}\n" * 20
    kept = rec(1, raw=raw, raw_media_type="application/yaml", raw_whole_file=True)
    publish(store, db, "v1", [kept, rec(2)])  # r2 has no upstream form (as a user-folder record)
    rows = db.execute("SELECT doc_id, media_type, whole_file, size, raw FROM document_raw").fetchall()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [("demo:r1", "application/yaml", True, len(raw.encode()))]
    assert zlib.decompress(rows[0][4]).decode() == raw and len(rows[0][4]) < len(raw) / 4
    # An edit upstream that changes no searchable field (a comment) is an update: the stored form follows.
    edited = dataclasses.replace(kept, raw=raw.replace("an upstream comment", "another comment"))
    result = publish(store, db, "v2", [edited, rec(2)])
    assert (result.updated, result.unchanged) == (1, 1)
    stored = db.execute("SELECT raw FROM document_raw WHERE doc_id = 'demo:r1'").fetchone()[0]
    assert "another comment" in zlib.decompress(stored).decode()
    assert db.execute("SELECT source_version FROM documents WHERE doc_id = 'demo:r1'").fetchone() == ("v2",)
    publish(store, db, "v3", [rec(2)], max_shrink=1.0)  # a deleted document takes its form along
    assert db.execute("SELECT count(*) FROM document_raw").fetchone() == (0,)


def _analyzed(db: psycopg.Connection) -> int:
    return db.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'chunks'").fetchone()[0]


def test_a_publish_that_changed_rows_refreshes_the_planner_statistics(store: Store, db: psycopg.Connection) -> None:
    before = _analyzed(db)
    publish(store, db, "v1", [rec(i) for i in range(5)])
    db.execute("SELECT pg_stat_force_next_flush()")
    after_first = _analyzed(db)
    assert after_first == before + 1
    stats = db.execute("SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'chunks' AND attname = 'source'")
    assert "demo" in (stats.fetchone() or [""])[0]  # the estimates know the new source at once
    publish(store, db, "v2", [rec(i) for i in range(5)])  # nothing changed: no ANALYZE
    db.execute("SELECT pg_stat_force_next_flush()")
    assert _analyzed(db) == after_first


def test_lookup_change_reindexes_affected_chunks(store: Store, db: psycopg.Connection) -> None:
    records = [rec(1, body="uses T1003"), rec(2)]
    publish(store, db, "v1", records)
    result = store.publish(
        db,
        source="demo",
        version="v2",
        records=records,
        lookup={"T1003": "Credential Dumping (renamed)"},
        chunking=ChunkConfig(),
    )
    assert (result.updated, result.unchanged) == (1, 1)


@pytest.mark.parametrize(
    "records, reason",
    [
        ([], "empty result"),
        ([rec(i) for i in range(4)], "shrank from 10 to 4"),
    ],
)
def test_refused_versions_keep_the_old_one_served(
    store: Store, db: psycopg.Connection, records: list[Record], reason: str
) -> None:
    publish(store, db, "v1", [rec(i) for i in range(10)])
    result = publish(store, db, "v2", records)
    assert result.status == "refused" and reason in (result.reason or "")
    assert db.execute("SELECT count(*) FROM documents").fetchone()[0] == 10
    src = db.execute(
        "SELECT current_version, st.state, st.error_kind, v.error_detail FROM sources s "
        "JOIN source_status st USING (name) JOIN source_versions v ON v.id = st.attempt_id WHERE name = 'demo'"
    ).fetchone()
    assert src[:3] == ("v1", "refused", "empty" if not records else "shrank") and reason in src[3]
    statuses = [r[0] for r in db.execute("SELECT status FROM source_versions ORDER BY id").fetchall()]
    assert statuses == ["published", "refused"]


def test_forced_shrink_is_published(store: Store, db: psycopg.Connection) -> None:
    publish(store, db, "v1", [rec(i) for i in range(10)])
    result = publish(store, db, "v2", [rec(0)], force=True)
    assert result.status == "published" and result.deleted == 9


def test_access_is_stored_and_part_of_the_diff(store: Store, db: psycopg.Connection) -> None:
    publish(store, db, "v1", [rec(1)], access=Access("acme", ("alice",), ("soc",)))
    assert db.execute("SELECT tenant, acl_users, acl_groups FROM documents").fetchone() == ("acme", ["alice"], ["soc"])
    result = publish(store, db, "v2", [rec(1)], access=Access("acme", ("alice", "bob"), ("soc",)))
    assert result.updated == 1


def test_readers_see_old_or_new_never_a_mix(store: Store, db_url: str, db: psycopg.Connection) -> None:
    old = [rec(i, body=f"old {i}") for i in range(300)]
    new = [rec(i, body=f"new {i}") for i in range(150, 450)]
    publish(store, db, "v1", old)
    seen: set[tuple[int, int]] = set()
    stop = threading.Event()

    def read() -> None:
        with database.connect(db_url, autocommit=True) as reader:
            while not stop.is_set():
                seen.add(
                    reader.execute(
                        "SELECT count(*) FILTER (WHERE body LIKE 'old%%'), count(*) FILTER (WHERE body LIKE 'new%%') "
                        "FROM documents"
                    ).fetchone()
                )

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for i in range(3):
            publish(store, db, f"v{2 + 2 * i}", new)
            publish(store, db, f"v{3 + 2 * i}", old)
    finally:
        stop.set()
        thread.join()
    assert seen <= {(300, 0), (0, 300)}


def _counts(db: psycopg.Connection) -> tuple[int, int]:
    return db.execute("SELECT documents, chunks FROM source_counts WHERE source = 'demo'").fetchone()


def _live(db: psycopg.Connection) -> tuple[int, int]:
    return db.execute(
        "SELECT (SELECT count(*) FROM documents WHERE source = 'demo'), "
        "(SELECT count(*) FROM chunks WHERE source = 'demo')"
    ).fetchone()


def test_kept_counts_follow_every_publish_and_embedding_pass(store: Store, db: psycopg.Connection) -> None:
    """/v1/stats reads source_counts and source_model_counts: they equal the rows after each change."""
    from pipeline.embedding import embed_pending
    from secrag.models.encoders import document_encoder
    from secrag.settings import get_settings

    publish(store, db, "v1", [rec(i) for i in range(10)])
    assert _counts(db) == _live(db) == (10, 10)
    publish(store, db, "v2", [rec(0), rec(1, body="changed " * 300)], force=True)
    assert _counts(db) == _live(db) and _counts(db)[0] == 2
    assert db.execute("SELECT count(*) FROM source_model_counts").fetchone()[0] == 0
    encoder = document_encoder("all-MiniLM-L6-v2-int8", batch_size=32, threads=1, cache_dir=get_settings().models_dir)
    embed_pending(db, encoder, sql_dir(), source="demo")
    row = db.execute("SELECT model_id, vectors, chunks_embedded FROM source_model_counts").fetchone()
    distinct = db.execute("SELECT count(DISTINCT content_hash) FROM chunks WHERE source = 'demo'").fetchone()[0]
    assert distinct < _live(db)[1]  # repeated text: chunks that share a vector count it once
    assert row == ("all-MiniLM-L6-v2-int8", distinct, _live(db)[1])
    publish(store, db, "v3", [rec(0)], force=True)  # the publish recounts the vectors its chunks keep
    assert db.execute("SELECT vectors, chunks_embedded FROM source_model_counts").fetchone() == (1, 1)


def test_old_unchanged_attempts_are_pruned_but_never_a_sources_last(store: Store, db: psycopg.Connection) -> None:
    publish(store, db, "v1", [rec(1)])
    for age in (200, 100, 95):
        store.record_unchanged(db, "demo", "v1")
        db.execute(
            "UPDATE source_versions SET started_at = now() - make_interval(days => %(age)s), "
            "finished_at = now() - make_interval(days => %(age)s) "
            "WHERE id = (SELECT max(id) FROM source_versions WHERE status = 'unchanged')",
            {"age": age},
        )
    assert store.prune_history(db, 90) == (0, 2)  # the youngest of the three is the source's last attempt
    left = db.execute("SELECT status FROM source_versions WHERE source = 'demo' ORDER BY id").fetchall()
    assert left == [("published",), ("unchanged",)]
    assert db.execute("SELECT state FROM source_status WHERE name = 'demo'").fetchone()[0] == "ok"


CHANGES = "SELECT doc_id, title, change, old_version, new_version, tenant, acl_users FROM document_changes ORDER BY id"


def test_each_publish_records_what_it_added_modified_and_removed(store: Store, db: psycopg.Connection) -> None:
    first = publish(store, db, "v1", [rec(i) for i in range(3)], access=Access("acme", ("alice",)))
    assert [r[:5] for r in db.execute(CHANGES).fetchall()] == [
        (f"demo:r{i}", f"Rule {i}", "added", None, "v1") for i in range(3)
    ]
    db.execute("DELETE FROM document_changes")
    second = publish(store, db, "v2", [rec(0), rec(1, body="new body"), rec(3)], access=Access("acme", ("alice",)))
    assert (first.inserted, second.inserted, second.modified, second.deleted) == (3, 1, 1, 1)
    removed, added, modified = db.execute(CHANGES).fetchall()
    assert removed == ("demo:r2", "Rule 2", "removed", "v1", "v2", "acme", ["alice"])  # as it was before
    assert added[:5] == ("demo:r3", "Rule 3", "added", "v1", "v2") and modified[:3] == ("demo:r1", "Rule 1", "modified")
    ids = {r[0] for r in db.execute("SELECT DISTINCT version_id FROM document_changes").fetchall()}
    assert ids == {second.version_id}


def test_chunking_differently_is_no_change_of_content(store: Store, db: psycopg.Connection) -> None:
    records = [rec(1, body="uses T1003"), rec(2)]
    publish(store, db, "v1", records)
    result = store.publish(db, source="demo", version="v1", records=records, lookup={}, chunking=ChunkConfig())
    assert (result.updated, result.modified) == (1, 0)
    assert db.execute("SELECT count(*) FROM document_changes WHERE change <> 'added'").fetchone()[0] == 0


def test_old_changes_are_pruned(store: Store, db: psycopg.Connection) -> None:
    publish(store, db, "v1", [rec(1), rec(2)])
    db.execute("UPDATE document_changes SET changed_at = now() - interval '91 days' WHERE doc_id = 'demo:r1'")
    assert store.prune_history(db, 90) == (1, 0)
    assert [r[0] for r in db.execute(CHANGES).fetchall()] == ["demo:r2"]


def test_a_url_pinned_to_the_version_changes_no_content(store: Store, db: psycopg.Connection) -> None:
    def pinned(version: str, i: int, body: str = "") -> Record:
        return dataclasses.replace(rec(i, body=body), url=f"https://example.org/blob/{version}/r{i}.yml")

    publish(store, db, "v1", [pinned("v1", i) for i in range(3)])
    result = publish(store, db, "v2", [pinned("v2", 0), pinned("v2", 1, "edited"), pinned("v2", 2)])
    assert (result.updated, result.modified) == (3, 1)  # every URL moved; one record changed
    rows = db.execute("SELECT doc_id, change FROM document_changes WHERE new_version = 'v2'").fetchall()
    assert rows == [("demo:r1", "modified")]


def _artefacts(db: psycopg.Connection) -> set[tuple[str, str, str]]:
    return {tuple(r) for r in db.execute("SELECT doc_id, kind, key FROM document_artefacts").fetchall()}  # type: ignore[misc]


def _held(i: int, *found: object) -> Record:
    return rec(i, artefacts=artefacts.unique(found))  # type: ignore[arg-type]


def test_artefacts_are_rewritten_with_each_version_and_kept_when_one_fails(
    store: Store, db: psycopg.Connection
) -> None:
    md5 = "A" * 32
    v1 = [_held(0, artefacts.file_hash("MD5", md5), artefacts.windows_name("Name", "Gdrv.sys")), *map(rec, range(1, 5))]
    result = publish(store, db, "v1", v1)
    assert result.artefacts == 2
    assert _artefacts(db) == {("demo:r0", "md5", "a" * 32), ("demo:r0", "file_name", "gdrv.sys")}
    # v2: r0 unchanged as a document, but its artefacts changed; r1 gains a path; nothing of v1 is left over
    v2 = [
        _held(0, artefacts.windows_name("Name", "Gdrv.sys")),
        _held(1, artefacts.windows_path("Path", "C:\\Windows\\System32\\x.exe")),
        *map(rec, range(2, 5)),
    ]
    result = publish(store, db, "v2", v2)
    assert (result.inserted, result.updated, result.deleted) == (0, 0, 0)  # no document changed: artefacts did
    assert _artefacts(db) == {("demo:r0", "file_name", "gdrv.sys"), ("demo:r1", "path", "%system32%\\x.exe")}
    # a refused version and a failed one leave v2's rows
    assert publish(store, db, "v3", [_held(0, artefacts.file_hash("MD5", md5))]).status == "refused"
    broken = [*v2, rec(9), dataclasses.replace(rec(9), title="other")]  # one new id twice: fails inside
    with pytest.raises(psycopg.Error):
        publish(store, db, "v4", broken)
    assert _artefacts(db) == {("demo:r0", "file_name", "gdrv.sys"), ("demo:r1", "path", "%system32%\\x.exe")}
    # a removed document's rows go with it
    publish(store, db, "v5", [rec(i) for i in range(5)], force=True)
    assert _artefacts(db) == set()


def test_a_kept_document_stays_as_it_was_with_its_chunks_and_artefacts(store: Store, db: psycopg.Connection) -> None:
    v1 = [_held(0, artefacts.windows_name("Name", "Gdrv.sys")), *map(rec, range(1, 4))]
    publish(store, db, "v1", v1)
    documents = "SELECT doc_id, content_hash, body FROM documents ORDER BY doc_id"
    before, chunks = db.execute(documents).fetchall(), db.execute("SELECT count(*) FROM chunks").fetchone()
    # r0's file could not be read this time, r3 is gone: r0 stays whole, r3 goes, counted as the source holds
    result = publish(store, db, "v2", [rec(1), rec(2)], kept=["demo:r0", "demo:r3x"], max_shrink=0.3)
    assert (result.status, result.kept, result.deleted, result.unchanged) == ("published", 1, 1, 2)
    assert db.execute(documents).fetchall() == [r for r in before if r[0] != "demo:r3"]
    assert db.execute("SELECT count(*) FROM chunks WHERE doc_id = 'demo:r0'").fetchone()[0] > 0
    assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] < chunks[0]
    assert _artefacts(db) == {("demo:r0", "file_name", "gdrv.sys")}
    assert db.execute("SELECT record_count FROM sources WHERE name = 'demo'").fetchone()[0] == 3
    removed = db.execute("SELECT doc_id FROM document_changes WHERE change = 'removed'").fetchall()
    assert removed == [("demo:r3",)]  # a kept document is not announced removed
    # kept documents count against the shrink guard like the records do
    assert publish(store, db, "v3", [rec(1)], kept=["demo:r0"], max_shrink=0.3).status == "refused"


ACCESSES = "SELECT doc_id, tenant, acl_users FROM document_accesses ORDER BY doc_id, acl_users"


def test_every_access_a_document_had_is_remembered_until_its_last_entry_goes(
    store: Store, db: psycopg.Connection
) -> None:
    publish(store, db, "v1", [rec(1), rec(2)], access=Access("acme"))
    publish(store, db, "v2", [rec(1)], kept=["demo:r2"], access=Access("acme", ("alice",)))  # r2 narrowed, kept
    publish(store, db, "v3", [rec(1)], kept=["demo:r2"], access=Access("acme"))  # r2 widened again, kept
    publish(store, db, "v4", [rec(1)], access=Access("acme"), force=True)  # r2 gone
    assert db.execute(ACCESSES).fetchall() == [
        ("demo:r1", "acme", []),
        ("demo:r1", "acme", ["alice"]),
        ("demo:r2", "acme", []),
        ("demo:r2", "acme", ["alice"]),  # narrowed while no entry was recorded: remembered all the same
    ]
    db.execute("UPDATE document_changes SET changed_at = now() - interval '91 days'")
    assert store.prune_history(db, 90)[0] == 5  # two added, r1 modified twice (its access), r2 removed
    assert [r[0] for r in db.execute(ACCESSES).fetchall()] == ["demo:r1", "demo:r1"]  # r1 is still served
