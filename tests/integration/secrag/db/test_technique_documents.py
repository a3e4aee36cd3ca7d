"""technique_documents (migration 0023) stays equal to the labels of documents, one row per (technique,
document) with the document's labels, source and tenant, through inserts, updates (a republish, a folder
moved between tenants) and deletes, whichever statement writes them."""

from __future__ import annotations

import psycopg


def _rows(db: psycopg.Connection) -> set[tuple[object, ...]]:
    return {
        (*r[:-1], tuple(r[-1]))
        for r in db.execute("SELECT technique, doc_id, source, tenant, labels, techniques FROM technique_documents")
    }


def _from_documents(db: psycopg.Connection) -> set[tuple[object, ...]]:
    return {
        (*r[:-1], tuple(r[-1]))
        for r in db.execute(
            "SELECT DISTINCT t, doc_id, source, tenant, cardinality(techniques), techniques"
            " FROM documents, unnest(techniques) AS t"
        )
    }


def _insert(db: psycopg.Connection, rows: list[tuple[str, list[str], str | None]]) -> None:
    for doc_id, _, tenant in rows:
        source = doc_id.split(":")[0]
        db.execute(
            "INSERT INTO sources (name, kind) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (source, "user_folder" if tenant else "online"),
        )
    with db.cursor() as cur:
        cur.executemany(
            "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash, techniques, tenant)"
            " VALUES (%s, split_part(%s, ':', 1), 'v1', %s, '', 'h', %s, %s)",
            [(doc_id, doc_id, doc_id, techniques, tenant) for doc_id, techniques, tenant in rows],
        )


def test_rows_follow_the_documents_labels(db: psycopg.Connection) -> None:
    _insert(
        db,
        [
            ("sigma:a", ["T1003", "T1003.001"], None),
            ("sigma:b", ["T1003.001"], None),
            ("atomic:c", [], None),
            ("notes:d", ["T1059.001", "T1059.001"], "acme"),  # a label twice: one row
        ],
    )
    assert _rows(db) == _from_documents(db)
    assert ("T1003.001", "sigma:b", "sigma", None, 1, ("T1003.001",)) in _rows(db)
    # a republish changes labels in one statement; a folder moves to another tenant
    db.execute(
        "UPDATE documents SET techniques = CASE doc_id WHEN 'sigma:a' THEN ARRAY['T1105'] ELSE techniques END,"
        " source_version = 'v2' WHERE source = 'sigma'"
    )
    db.execute("UPDATE documents SET tenant = 'globex' WHERE doc_id = 'notes:d'")
    assert _rows(db) == _from_documents(db)
    assert not [r for r in _rows(db) if r[1] == "sigma:a" and r[0] == "T1003"]
    db.execute("DELETE FROM documents WHERE doc_id IN ('sigma:b', 'notes:d')")
    assert _rows(db) == _from_documents(db) == {("T1105", "sigma:a", "sigma", None, 1, ("T1105",))}


def test_each_techniques_documents_come_fewest_labels_first(db: psycopg.Connection) -> None:
    """The order the legs read (sql/queries/serving.sql `labelled`) is the primary key's."""
    _insert(db, [("sigma:x", ["T1105", "T1082", "T1083"], None), ("sigma:y", ["T1105"], None)])
    db.execute("SET enable_seqscan = off")  # a table of two rows is read whole otherwise
    plan = "\n".join(
        r[0]
        for r in db.execute(
            "EXPLAIN SELECT doc_id FROM technique_documents WHERE technique = 'T1105' ORDER BY labels, doc_id LIMIT 5"
        )
    )
    assert "technique_documents_pkey" in plan and "Sort" not in plan
    ordered = db.execute(
        "SELECT doc_id FROM technique_documents WHERE technique = 'T1105' ORDER BY labels, doc_id"
    ).fetchall()
    assert [r[0] for r in ordered] == ["sigma:y", "sigma:x"]
