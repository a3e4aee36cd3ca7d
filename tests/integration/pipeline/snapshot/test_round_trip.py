"""A snapshot exported from a real store and imported into a fresh one answers the dev queries exactly as the
store it came from, holds nothing private, and lets the pipeline find its sources current."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from pipeline.snapshot.loading import import_snapshot
from pipeline.snapshot.manifest import MANIFEST, ModelFacts, parse_manifest
from secrag.db import database
from secrag.db.queries import Queries
from tests.integration.serving.corpus import PRIVATE
from tests.plugins.upstream import SNAPSHOT

from .conftest import INGESTED, SECRETS, SQL_DIR, api

DEV_QUERIES = SNAPSHOT.parent / "eval" / "cti_dev_queries.jsonl"
PUBLIC_TABLES = ("sources", "documents", "chunks", "document_raw", "document_artefacts", "mitre_techniques")


def dev_queries(count: int = 20) -> list[dict[str, Any]]:
    """The first `count` CTI dev queries: half as given (filtered to ATT&CK), half over every source."""
    lines = DEV_QUERIES.read_text(encoding="utf-8").splitlines()[:count]
    queries = [json.loads(line) for line in lines]
    return [
        {"query": q["query"], **({"filters": q["filters"]} if i % 2 == 0 and q.get("filters") else {})}
        for i, q in enumerate(queries)
    ]


def answers(url: str, queries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    with api(url) as client:
        out = []
        for body in queries:
            response = client.post("/v1/search", json={**body, "k": 10})
            assert response.status_code == 200, response.text
            out.append(response.json()["results"])
        return out


def public_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every public source's rows of each table, in a stable order (what the import must reproduce)."""
    public = "IN (SELECT name FROM sources WHERE kind <> 'user_folder')"
    statements = {
        "sources": f"SELECT name, kind, current_version, record_count FROM sources WHERE name {public}",
        "documents": f"SELECT doc_id, content_hash, techniques, tenant FROM documents WHERE source {public}",
        "chunks": f"SELECT chunk_id, content_hash, enriched_text, tsv::text FROM chunks WHERE source {public}",
        "chunk_vectors": f"SELECT chunk_id, model_id, vector::text FROM chunk_vectors WHERE source {public}",
        "technique_documents": f"SELECT technique, doc_id FROM technique_documents WHERE source {public}",
        "mitre_techniques": "SELECT id, full_name FROM mitre_techniques",
        "counts": f"SELECT source, documents, chunks FROM source_counts WHERE source {public}",
    }
    with database.connect(url, autocommit=True) as conn:
        return {name: sorted(conn.execute(stmt).fetchall()) for name, stmt in statements.items()}  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def imported(snapshot_file: Path, model: ModelFacts, pg_server_url: str, template_db: str) -> Any:  # noqa: ANN401
    from tests.plugins.database import migrated_copy

    with migrated_copy(pg_server_url, template_db, "secrag_snapshot_imported") as url:
        with database.connect(url, autocommit=True) as conn:
            done = import_snapshot(conn, SQL_DIR, snapshot_file, model)
        yield url, done


def test_the_imported_store_answers_the_dev_queries_as_the_source(source_store: str, imported: Any) -> None:  # noqa: ANN401
    url, _ = imported
    queries = dev_queries()
    before, after = answers(source_store, queries), answers(url, queries)
    assert sum(len(r) for r in before) > 100  # the queries find things
    for body, expected, got in zip(queries, before, after, strict=True):
        assert ranking(got) == ranking(expected), body["query"]
        # A leg's score may differ in its last float bits: PostgreSQL may plan an exact scan in one store and
        # the HNSW index in the other (a distance summed in another order); the page's score is rounded.
        assert [r["score"] for r in got] == [r["score"] for r in expected], body["query"]
        assert [strip(r) for r in got] == [strip(r) for r in expected], body["query"]


def ranking(results: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(r["doc_id"], r["chunk_id"]) for r in results]


def strip(result: dict[str, Any]) -> dict[str, Any]:
    """A result with its legs' scores rounded to 6 places."""
    legs = {
        leg: {**value, "score": round(value["score"], 6)} if isinstance(value, dict) else value
        for leg, value in result["scores"].items()
    }
    return {**result, "scores": legs}


def test_the_imported_store_holds_the_public_rows(source_store: str, imported: Any) -> None:  # noqa: ANN401
    url, done = imported
    assert public_rows(url) == public_rows(source_store)
    assert done.active_model == "all-MiniLM-L6-v2"
    assert done.rows["chunks"] == len(public_rows(source_store)["chunks"])


def test_no_user_folder_or_one_time_document_is_exported(snapshot_file: Path, imported: Any) -> None:  # noqa: ANN401
    url, done = imported
    exported = {s.name for s in done.manifest.sources}
    assert exported and not exported & {*PRIVATE, INGESTED}
    data = snapshot_file.read_bytes()
    assert not [word for word in SECRETS if word in data]  # not in any part, in any form
    with database.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM documents WHERE tenant IS NOT NULL").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM ingested_documents").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM sources WHERE kind = 'user_folder'").fetchone() == (0,)


def test_the_manifest_states_schema_model_sources_and_parts(snapshot_file: Path, model: ModelFacts) -> None:
    with tarfile.open(snapshot_file) as tar:
        names = tar.getnames()
        member = tar.extractfile(MANIFEST)
        assert member is not None
        manifest = parse_manifest(member.read())
    assert names[0] == MANIFEST and all(n.startswith("parts/") for n in names[1:])
    assert manifest.model == model
    assert {s.name: s.version for s in manifest.sources}["sigma"] == "test-v1"
    assert manifest.rows()["sources"] == len(manifest.sources)
    assert manifest.rows()["source_versions"] == len(manifest.sources)  # each one's last publish


def test_an_imported_source_counts_as_current(imported: Any) -> None:  # noqa: ANN401
    """The pipeline's refresh compares the last published attempt's fingerprint: the imported one is the
    exported one, so a refresh of an upstream that has not moved finds nothing to do."""
    url, _ = imported
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT s.name, s.current_version, v.version, st.state FROM sources s "
            "JOIN source_status st ON st.name = s.name "
            "JOIN LATERAL (SELECT version FROM source_versions WHERE source = s.name AND status = 'published' "
            "ORDER BY id DESC LIMIT 1) v ON true ORDER BY 1"
        ).fetchall()
    assert rows and all(current == published and state == "ok" for _, current, published, state in rows)
    pipeline = Queries(SQL_DIR, "pipeline")
    with database.connect(url, autocommit=True) as conn:
        for name, *_ in rows:
            assert conn.execute(pipeline.last_published_fingerprint, {"source": name}).fetchone() == (f"fp-{name}",)


def test_an_import_into_a_store_with_public_documents_is_refused(
    snapshot_file: Path, model: ModelFacts, source_store: str, fresh_store: Callable[[str], AbstractContextManager[str]]
) -> None:
    from secrag.errors import SnapshotRefused

    with database.connect(source_store, autocommit=True) as conn:
        before = public_rows(source_store)
        with pytest.raises(SnapshotRefused, match="already holds .* documents of public sources"):
            import_snapshot(conn, SQL_DIR, snapshot_file, model)
    assert public_rows(source_store) == before
