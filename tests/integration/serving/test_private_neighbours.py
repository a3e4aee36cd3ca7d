"""Private documents of another tenant, seeded as the nearest neighbours of every query, change nothing a
caller without that tenant's key is served: no endpoint, leg, plan, figure or MCP tool returns them, and
every id, order and score is the same with and without them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings

from .test_mcp import call

TENANT = "initech"  # no key of the suite belongs to it (conftest.KEYS)
SOURCE = "vault_notes"
# One per leg and query shape: a tool name, prose (the neighbours leg), ids (the exact leg), a technique
# named in full (the label leg), a misspelling (the fuzzy leg and spelling), a CVE, a command line.
QUERIES = [
    "mimikatz",
    "LSASS credential dumping with a memory dump of the process",
    "T1003.001",
    "OS Credential Dumping: LSASS Memory",
    "mimkatz sekurlsa",
    "CVE-2021-44228",
    "powershell -enc encoded command download cradle",
    "rundll32 javascript",
]
CALLERS = [None, "alice-key", "gina-key"]  # anonymous, tenant acme, tenant globex
SEARCHES: list[dict[str, Any]] = [
    {"mode": "hybrid"},
    {"mode": "hybrid", "strategy": "fts_then_vec"},
    {"mode": "fts"},
    {"mode": "vector"},
    {"mode": "fuzzy"},
    {"mode": "hybrid", "group_by_doc": False, "return": {"text": True, "snippets": True, "metadata": True}},
]
# Whole-store figures of /v1/stats: sizes and the pipeline's vector total count every tenant's rows
# (tests/unit/serving/test_statements.py WHOLE_STORE_READS); request and encoder metrics count this
# process, and ages follow the clock.
VOLATILE = {
    "took_ms",
    "latency_ms",
    "timings",
    "requests",
    "encoder",
    "sync_age_s",
    "table_bytes",
    "index_bytes",
    "uptime_s",
}


def _normalised(value: Any) -> Any:  # noqa: ANN401 - a JSON document
    if isinstance(value, dict):
        return {k: _normalised(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    return value


def _differences(a: Any, b: Any, path: str = "") -> list[str]:  # noqa: ANN401
    """Where two JSON documents differ (the assertion's message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(a.keys() | b.keys()) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def _private_ids(n: int) -> list[str]:
    return [f"{SOURCE}:q{i}" for i in range(n)]


def _requests(public_ids: list[str]) -> list[tuple[str, str, Any]]:
    """(name, kind, payload) of every request compared, for one caller."""
    private = _private_ids(len(QUERIES))
    cases: list[tuple[str, str, Any]] = []
    for query in QUERIES:
        for body in SEARCHES:
            cases.append((f"search {body} {query!r}", "POST /v1/search", {"query": query, "k": 20, **body}))
        cases.append((f"plan {query!r}", "POST /v1/plan", {"query": query}))
        cases.append((f"explain {query!r}", "POST /v1/plan/explain", {"query": query}))
        cases.append((f"mcp search {query!r}", "mcp search", {"query": query, "k": 20}))
        cases.append((f"mcp plan {query!r}", "mcp plan", {"query": query}))
    cases.append(("search naming the private ids", "POST /v1/search", {"query": " ".join(private[:3]), "k": 20}))
    cases.append(
        ("search filtered to the private ids", "POST /v1/search", {"query": "x", "filters": {"doc_ids": private}})
    )
    cases.append(("documents by id", "POST /v1/docs", {"ids": [*public_ids, *private]}))
    cases.append(("chunks by id", "POST /v1/chunks", {"ids": [f"{i}#0" for i in [*public_ids, *private]]}))
    cases.append(("a private document", "GET /v1/docs/" + private[0], None))
    cases.append(("a private chunk", "GET /v1/chunks/" + private[0] + "#0", None))
    cases.append(("sources", "GET /v1/sources", None))
    cases.append(("stats", "GET /v1/stats", None))
    cases.append(("mcp stats", "mcp stats", {}))
    cases.append(("mcp sources", "mcp list_sources", {}))
    cases.append(("mcp documents", "mcp get_documents", {"ids": [*public_ids, *private]}))
    return cases


def _answer(client: TestClient, kind: str, payload: Any, key: str | None) -> Any:  # noqa: ANN401
    headers = {"X-API-Key": key} if key else {}
    if kind.startswith("mcp "):
        return call(client, kind.removeprefix("mcp "), key, **payload)
    method, path = kind.split(" ", 1)
    response = client.request(method, path, json=payload, headers=headers)
    return {"status": response.status_code, "body": response.json()}


def _answers(client: TestClient, public_ids: list[str]) -> dict[tuple[str, str | None], Any]:
    return {
        (name, key): _answer(client, kind, payload, key)
        for key in CALLERS
        for name, kind, payload in _requests(public_ids)
    }


@pytest.fixture
def fresh_app(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], api_keys_file: Path, tmp_path: Path
) -> Callable[[], TestClient]:
    """A new app per phase, so no catalog, vocabulary or result cache carries one phase into the next; it
    also knows a key of the private tenant (ivan-key), which only the control below uses."""
    keys = tmp_path / "keys.yaml"
    keys.write_text(
        api_keys_file.read_text(encoding="utf-8")
        + f"  - {{key_sha256: {hashlib.sha256(b'ivan-key').hexdigest()}, tenant: {TENANT}, user: ivan, groups: []}}\n",
        encoding="utf-8",
    )
    return lambda: TestClient(create_app(settings_for(serving_db_url, result_cache_size=0, api_keys_file=keys)))


def _seed(conn: psycopg.Connection, client: TestClient, bases: list[str]) -> None:
    """Per query, a private copy of its best public document whose first chunk is titled by the query and
    holds the query's own vector: the nearest neighbour of every leg."""
    service = client.app.state.service  # type: ignore[attr-defined]
    model = service.searcher.encoder.model_id
    conn.execute(
        "INSERT INTO sources (name, kind, description, category) "
        "SELECT %(source)s, kind, description, category FROM sources WHERE name = 'globex_notes'",
        {"source": SOURCE},
    )
    for doc_id, base, query in zip(_private_ids(len(QUERIES)), bases, QUERIES, strict=True):
        params = {"doc": doc_id, "base": base, "source": SOURCE, "tenant": TENANT, "query": query, "model": model}
        params["hash"] = f"private-{doc_id}"
        params["vector"] = "[" + ",".join(str(float(x)) for x in service.searcher.encoder.encode(query)) + "]"
        conn.execute(
            "INSERT INTO documents (doc_id, source, source_version, title, url, body, metadata, techniques, "
            "platforms, tags, content_hash, tenant, media_type) "
            "SELECT %(doc)s, %(source)s, source_version, %(query)s, url, body, metadata, techniques, platforms, "
            "tags, content_hash, %(tenant)s, media_type FROM documents WHERE doc_id = %(base)s",
            params,
        )
        conn.execute(
            "INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%(hash)s, %(model)s, %(vector)s::vector)",
            params,
        )
        conn.execute(
            "INSERT INTO chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, identifiers, "
            "content_hash, char_start, char_end, heading, pages) "
            "SELECT %(doc)s || '#' || ordinal, %(doc)s, %(source)s, ordinal, "
            "CASE WHEN ordinal = 0 THEN %(query)s ELSE title END, text, %(query)s || ' ' || enriched_text, "
            "identifiers, CASE WHEN ordinal = 0 THEN %(hash)s ELSE content_hash END, char_start, char_end, "
            "heading, pages FROM chunks WHERE doc_id = %(base)s",
            params,
        )


def _unseed(conn: psycopg.Connection) -> None:
    conn.execute("DELETE FROM chunk_vectors WHERE source = %s", [SOURCE])
    conn.execute("DELETE FROM chunks WHERE source = %s", [SOURCE])
    conn.execute("DELETE FROM documents WHERE source = %s", [SOURCE])
    conn.execute("DELETE FROM embeddings WHERE content_hash LIKE %s", [f"private-{SOURCE}:%"])
    conn.execute("DELETE FROM sources WHERE name = %s", [SOURCE])


@pytest.fixture
def owner(serving_db_url: str) -> Iterator[psycopg.Connection]:
    with database.connect(serving_db_url, autocommit=True) as conn:
        yield conn
        _unseed(conn)


def test_private_nearest_neighbours_change_no_answer(
    fresh_app: Callable[[], TestClient], owner: psycopg.Connection
) -> None:
    with fresh_app() as client:
        bases = [client.post("/v1/search", json={"query": q, "k": 1}).json()["results"][0]["doc_id"] for q in QUERIES]
        public_ids = sorted(set(bases))
        without = _answers(client, public_ids)
    with fresh_app() as client:
        _seed(owner, client, bases)
        # the seeded rows are what the owner finds first for every query: the comparison is not vacuous
        encoder = client.app.state.service.searcher.encoder  # type: ignore[attr-defined]
        model = encoder.model_id
        for query, doc_id in zip(QUERIES, _private_ids(len(QUERIES)), strict=True):
            vector = "[" + ",".join(str(float(x)) for x in encoder.encode(query)) + "]"
            nearest = owner.execute(
                "SELECT c.doc_id FROM embeddings e JOIN chunks c ON c.content_hash = e.content_hash "
                "WHERE e.model_id = %s ORDER BY e.vector <=> %s::vector LIMIT 1",
                [model, vector],
            ).fetchone()
            assert nearest == (doc_id,)
            # and the private tenant's own caller is served seeded documents among the first five, by vector (the
            # API encodes the enriched query) and by title
            for mode in ("vector", "fuzzy"):
                found = client.post(
                    "/v1/search", json={"query": query, "k": 5, "mode": mode}, headers={"X-API-Key": "ivan-key"}
                ).json()["results"]
                assert any(r["source"] == SOURCE for r in found), (query, mode, [r["doc_id"] for r in found])
        with_private = _answers(client, public_ids)
    cases = _requests(public_ids)
    assert len(without) == len(with_private) == len(CALLERS) * len(cases)
    named = {name for name, kind, payload in cases if SOURCE in kind + json.dumps(payload)}  # echoed back, never found
    for (name, key), answer in without.items():
        changed = _differences(_normalised(answer), _normalised(with_private[name, key]))
        assert not changed, (name, key, changed[:5])
        served = json.dumps(with_private[name, key])
        assert TENANT not in served and (name in named or SOURCE not in served), (name, key)
