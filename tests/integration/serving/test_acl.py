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


def test_counts_are_of_the_documents_the_caller_may_see(client: TestClient, serving_db_url: str) -> None:
    """/v1/stats and /v1/sources count a user folder's documents as the caller sees them, even when
    one document of a folder the caller may see is restricted further."""
    from secrag.db import database

    def counts(key: str) -> tuple[int, int, int]:
        stats = client.get("/v1/stats", headers={"X-API-Key": key}).json()["sources"]["acme_shared"]
        [listed] = [
            s
            for s in client.get("/v1/sources", headers={"X-API-Key": key}).json()["sources"]
            if s["name"] == "acme_shared"
        ]
        return stats["documents"], stats["chunks"], listed["records"]

    before = counts("bob-key")
    assert before == counts("alice-key") and before[0] == 3
    with database.connect(serving_db_url, autocommit=True) as conn:
        conn.execute("UPDATE documents SET acl_users = '{alice}' WHERE doc_id = 'acme_shared:note-0'")
        try:
            assert counts("alice-key") == before
            bob = counts("bob-key")
            assert bob[0] == bob[2] == 2 and bob[1] < before[1]
        finally:
            conn.execute("UPDATE documents SET acl_users = '{}' WHERE doc_id = 'acme_shared:note-0'")
