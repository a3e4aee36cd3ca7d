"""A source's own HNSW index (`secrag models index-source`, pipeline/model_store.py): a search filtered to
that source walks it, with the answer of the whole store's walk, and without it searches walk the whole
store's graph again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from pipeline.model_store import source_index_name
from secrag.db import database
from secrag_cli.models import models
from serving.api.app import create_app
from serving.search import leg_runs, leg_shapes
from serving.settings import ServingSettings

from .conftest import search

SOURCE = "sigma"


@pytest.fixture
def indexed(serving_db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The source indexed through the command (and dropped again); its index's name."""
    monkeypatch.setenv("SECRAG_DATABASE_URL", serving_db_url)
    made = CliRunner().invoke(models, ["index-source", SOURCE])
    assert made.exit_code == 0 and f"{SOURCE}: indexed" in made.output, made.output
    again = CliRunner().invoke(models, ["index-source", SOURCE])
    assert f"{SOURCE}: already indexed" in again.output
    with database.connect(serving_db_url, autocommit=True) as conn:
        model = conn.execute("SELECT model_id FROM embedding_models WHERE active").fetchone()[0]  # type: ignore[index]
    yield source_index_name(model, SOURCE)
    dropped = CliRunner().invoke(models, ["index-source", "--drop", SOURCE])
    assert dropped.exit_code == 0 and f"{SOURCE}: dropped" in dropped.output


def test_a_one_source_search_walks_the_sources_own_index(
    indexed: str,
    serving_db_url: str,
    settings_for: Callable[..., ServingSettings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(leg_shapes, "EXACT_VECTOR_MAX_CHUNKS", 0)  # the corpus is small: never exact here
    ran: list[str] = []
    fetch = leg_runs.fetch

    def recorded(conn: psycopg.Connection, statement: Any, params: dict[str, Any], name: str) -> list[dict[str, Any]]:  # noqa: ANN401
        ran.append(str(statement))
        return fetch(conn, statement, params, name)

    monkeypatch.setattr(leg_runs, "fetch", recorded)
    body = {"query": "dump the memory of the lsass process", "k": 10, "filters": {"sources": [SOURCE]}}
    # the corpus is small: its sources' vectors would be held in memory (serving/search/source_vectors.py)
    with TestClient(create_app(settings_for(serving_db_url, search_source_vectors_mb=0))) as api:
        service = api.app.state.service  # type: ignore[attr-defined]
        own = search(api, mode="vector", **body)
        hybrid = search(api, **body)
        two = search(api, mode="vector", **{**body, "filters": {"sources": [SOURCE, "mitre_attack"]}})
        vec_source = service.searcher.statements.vec_source
        # the planner may read a source this small whole; with its other ways off it walks the index
        with service.pool.connection() as conn:
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET enable_sort = off")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + vec_source, _params(service, body)))
    # the vector search, the hybrid's own statement (its voter legs may run beside, on another thread, so in
    # either order), not two sources
    assert vec_source in ran[0] and any(vec_source in statement for statement in ran[1:-1])
    assert vec_source not in ran[-1]
    assert indexed in plan
    assert own["results"] and {r["source"] for r in own["results"] + hybrid["results"]} == {SOURCE}
    assert two["results"]
    # the same nearest chunks as the whole store's walk, once the index is gone
    CliRunner().invoke(models, ["index-source", "--drop", SOURCE])
    ran.clear()
    with TestClient(create_app(settings_for(serving_db_url))) as api:
        whole = search(api, mode="vector", **body)
    assert ran and vec_source not in ran[0]
    assert [r["chunk_id"] for r in whole["results"]] == [r["chunk_id"] for r in own["results"]]
    CliRunner().invoke(models, ["index-source", SOURCE])  # for the fixture's drop


def _params(service: Any, body: dict[str, Any]) -> dict[str, Any]:  # noqa: ANN401
    """The vector leg's parameters for an anonymous search of `body` (the encoder's vector)."""
    from secrag.attack_domains import ATTACK_SOURCES
    from serving.access.keys import ANONYMOUS

    vector = service.searcher.encoder.encode(body["query"])
    none = dict.fromkeys(["doc_ids", "techniques", "platforms", "domains", "domain_techniques", "tags_any"], None)
    none |= dict.fromkeys(["tags_all", "updated_after"], None)
    none |= dict.fromkeys(["updated_before", "created_after", "created_before", "fts_text", "ident_text"], None)
    return {
        **ANONYMOUS.params(),
        **none,
        "sources": body["filters"]["sources"],
        "doc_filters": False,
        "attack_sources": list(ATTACK_SOURCES),
        "qvec": vector,
        "vec_k": 10,
        "pool_fts": False,
        "ident_tier": False,
        "has_ident": False,
    }


def test_the_command_names_what_it_cannot_index(serving_db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRAG_DATABASE_URL", serving_db_url)
    refused = CliRunner().invoke(models, ["index-source", "sigmaa"])
    assert refused.exit_code != 0 and "unknown sources: sigmaa" in refused.output and "sigma" in refused.output
    nothing = CliRunner().invoke(models, ["index-source"])
    assert nothing.exit_code != 0 and "name sources or --min-chunks" in nothing.output
    with psycopg.connect(serving_db_url) as conn:
        assert not conn.execute("SELECT 1 FROM pg_indexes WHERE indexname LIKE 'chunk_vectors_%_hnsw'").fetchall()
