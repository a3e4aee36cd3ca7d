"""chunk_vectors (migration 0009) stays equal to chunks x embeddings, whichever is written first, follows a
document's tenant and goes with its chunk or its model; the store's side only, no encoder needed."""

from __future__ import annotations

import numpy as np
import psycopg

FP32, INT8 = "all-MiniLM-L6-v2", "all-MiniLM-L6-v2-int8"


def _vector(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return v / np.linalg.norm(v)


def _document(db: psycopg.Connection, doc_id: str, texts: list[str], tenant: str | None = None) -> None:
    source = doc_id.split(":")[0]
    db.execute(
        "INSERT INTO sources (name, kind) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (source, "user_folder" if tenant else "online"),
    )
    db.execute(
        "INSERT INTO documents (doc_id, source, source_version, title, body, content_hash, tenant)"
        " VALUES (%s, %s, 'v1', %s, %s, 'doc', %s)",
        (doc_id, source, doc_id, " ".join(texts), tenant),
    )
    with (
        db.cursor() as cur,
        cur.copy(
            "COPY chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, content_hash) FROM STDIN"
        ) as copy,
    ):
        for i, text in enumerate(texts):
            copy.write_row((f"{doc_id}#{i}", doc_id, source, i, doc_id, text, text, f"h:{text}"))


def _embed(db: psycopg.Connection, model: str, texts: list[str]) -> None:
    db.execute("INSERT INTO embedding_models (model_id, dimensions) VALUES (%s, 384) ON CONFLICT DO NOTHING", (model,))
    with (
        db.cursor() as cur,
        cur.copy("COPY embeddings (content_hash, model_id, vector) FROM STDIN WITH (FORMAT BINARY)") as copy,
    ):
        copy.set_types(["text", "text", "vector"])
        for text in texts:
            copy.write_row((f"h:{text}", model, _vector(len(text))))


def _rows(db: psycopg.Connection) -> set[tuple[str, str, str, str | None]]:
    return {
        tuple(r)  # type: ignore[misc]
        for r in db.execute("SELECT chunk_id, model_id, source, tenant FROM chunk_vectors")
    }


def _joined(db: psycopg.Connection) -> set[tuple[str, str, str, str | None]]:
    return {
        tuple(r)  # type: ignore[misc]
        for r in db.execute(
            "SELECT c.chunk_id, e.model_id, c.source, d.tenant FROM chunks c"
            " JOIN documents d ON d.doc_id = c.doc_id JOIN embeddings e ON e.content_hash = c.content_hash"
        )
    }


def test_vectors_reach_chunks_written_before_and_after_them(db: psycopg.Connection) -> None:
    _document(db, "sigma:a", ["lsass dump", "procdump"])
    assert _rows(db) == set()  # no vector yet
    _embed(db, FP32, ["lsass dump", "procdump", "unused text"])
    _document(db, "sigma:b", ["procdump"])  # its text already has a vector
    _embed(db, INT8, ["lsass dump"])
    assert _rows(db) == _joined(db)
    assert ("sigma:b#0", FP32, "sigma", None) in _rows(db) and len(_rows(db)) == 4
    stored = db.execute(
        "SELECT cv.vector = e.vector FROM chunk_vectors cv JOIN embeddings e USING (content_hash, model_id)"
    ).fetchall()
    assert stored and all(r[0] for r in stored)


def test_rows_go_with_their_chunk_and_their_model(db: psycopg.Connection) -> None:
    _document(db, "sigma:a", ["lsass dump", "procdump"])
    _embed(db, FP32, ["lsass dump", "procdump"])
    _embed(db, INT8, ["lsass dump", "procdump"])
    db.execute("DELETE FROM chunks WHERE doc_id = 'sigma:a' AND ordinal = 1")  # a republished document
    assert {r[0] for r in _rows(db)} == {"sigma:a#0"}
    db.execute("DELETE FROM embeddings WHERE model_id = %s", (INT8,))  # secrag models prune
    assert _rows(db) == {("sigma:a#0", FP32, "sigma", None)}
    db.execute("DELETE FROM documents WHERE doc_id = 'sigma:a'")
    assert _rows(db) == set()


def test_a_documents_tenant_is_followed_at_once(db: psycopg.Connection) -> None:
    _document(db, "notes:a", ["incident notes"], tenant="acme")
    _embed(db, INT8, ["incident notes"])
    assert _rows(db) == {("notes:a#0", INT8, "notes", "acme")}
    db.execute("UPDATE documents SET tenant = 'globex' WHERE doc_id = 'notes:a'")
    assert _rows(db) == {("notes:a#0", INT8, "notes", "globex")}
    db.execute("UPDATE documents SET tenant = NULL WHERE doc_id = 'notes:a'")
    assert _rows(db) == _joined(db) == {("notes:a#0", INT8, "notes", None)}
