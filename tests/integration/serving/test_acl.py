"""Access control: private user-folder documents never leak to another tenant, user or group."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from .conftest import search

QUERIES = [
    "mimikatz",
    "zanzibaracme",
    "zanzibarglobex",
    "secret note",
    "T1003.001",
    "LSASS credential dumping",
    "acme_notes:note-0",
    "globex_notes:note-0",
]
VISIBLE = {
    None: set(),
    "alice-key": {"acme_notes", "acme_shared"},
    "bob-key": {"acme_red", "acme_shared"},
    "carol-key": {"acme_shared"},
    "gina-key": {"globex_notes"},
}
PRIVATE_SOURCES = {"acme_notes", "acme_shared", "acme_red", "globex_notes"}


@pytest.mark.parametrize("key", list(VISIBLE))
@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector", "fuzzy"])
def test_search_never_leaks(client: TestClient, key: str | None, mode: str) -> None:
    seen: set[str] = set()
    for query in QUERIES:
        payload = search(client, query, key=key, mode=mode, k=50, group_by_doc=False)
        seen |= {r["source"] for r in payload["results"]} & PRIVATE_SOURCES
    assert seen <= VISIBLE[key]
    if key is not None and mode in ("hybrid", "fts"):
        assert seen == VISIBLE[key]


@pytest.mark.parametrize("key", list(VISIBLE))
def test_filters_and_lookups_never_leak(client: TestClient, key: str | None) -> None:
    headers = {"X-API-Key": key} if key else {}
    every_private = [f"{s}:note-{i}" for s in sorted(PRIVATE_SOURCES) for i in range(3)]
    payload = search(client, "note", key=key, k=50, filters={"doc_ids": every_private})
    assert {r["source"] for r in payload["results"]} <= VISIBLE[key]
    docs = client.post("/v1/docs", json={"ids": every_private}, headers=headers).json()
    assert {d["source"] for d in docs["documents"]} == VISIBLE[key]
    chunks = client.post("/v1/chunks", json={"ids": [f"{i}#0" for i in every_private]}, headers=headers).json()
    assert {c["source"] for c in chunks["chunks"]} == VISIBLE[key]
    for doc_id in every_private:
        status = client.get(f"/v1/docs/{doc_id}", headers=headers).status_code
        assert status == (200 if doc_id.split(":")[0] in VISIBLE[key] else 404)
    named = client.post("/v1/search", json={"query": "x", "filters": {"sources": ["globex_notes"]}}, headers=headers)
    assert named.status_code == (200 if "globex_notes" in VISIBLE[key] else 422)
    listed = {s["name"] for s in client.get("/v1/sources", headers=headers).json()["sources"]}
    assert listed & PRIVATE_SOURCES == VISIBLE[key]
    stats = client.get("/v1/stats", headers=headers).json()
    assert set(stats["sources"]) & PRIVATE_SOURCES == VISIBLE[key]


def test_bearer_token_and_unknown_key(client: TestClient) -> None:
    payload = client.post(
        "/v1/search", json={"query": "zanzibarglobex", "k": 5}, headers={"Authorization": "Bearer gina-key"}
    ).json()
    assert payload["results"] and payload["results"][0]["source"] == "globex_notes"
    assert client.post("/v1/search", json={"query": "x"}, headers={"X-API-Key": "wrong"}).status_code == 401
