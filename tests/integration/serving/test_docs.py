"""Documents and chunks by id."""

from __future__ import annotations

from urllib.parse import quote

from fastapi.testclient import TestClient


def test_get_document(client: TestClient) -> None:
    doc = client.get("/v1/docs/mitre_attack:T1003").json()
    assert doc["doc_id"] == "mitre_attack:T1003" and doc["source"] == "mitre_attack"
    assert doc["body"] and doc["chunk_ids"][0] == "mitre_attack:T1003#0"
    assert doc["source_version"] == "test-v1"


def test_document_ids_with_slashes(client: TestClient) -> None:
    ids = client.post("/v1/search", json={"query": "execute", "filters": {"sources": ["lolbas"]}, "k": 1}).json()
    doc_id = ids["results"][0]["doc_id"]
    assert "/" in doc_id
    assert client.get(f"/v1/docs/{quote(doc_id, safe=':/')}").json()["doc_id"] == doc_id


def test_missing_document_is_404(client: TestClient) -> None:
    response = client.get("/v1/docs/mitre_attack:T9999")
    assert response.status_code == 404 and "detail" in response.json()


def test_post_documents_lists_missing(client: TestClient) -> None:
    body = client.post("/v1/docs", json={"ids": ["mitre_attack:T1059", "nope:1", "mitre_attack:T1059"]}).json()
    assert [d["doc_id"] for d in body["documents"]] == ["mitre_attack:T1059"]
    assert body["missing"] == ["nope:1"] and body["truncated"] is False


def test_chunks(client: TestClient) -> None:
    chunk = client.get("/v1/chunks/" + quote("mitre_attack:T1003#0", safe=":")).json()
    assert chunk["doc_id"] == "mitre_attack:T1003" and chunk["ordinal"] == 0 and "t1003" in chunk["identifiers"]
    body = client.post("/v1/chunks", json={"ids": ["mitre_attack:T1003#0", "mitre_attack:T1003#999"]}).json()
    assert [c["chunk_id"] for c in body["chunks"]] == ["mitre_attack:T1003#0"]
    assert body["missing"] == ["mitre_attack:T1003#999"]
    assert client.get("/v1/chunks/" + quote("x#1", safe="")).status_code == 404


def test_ids_request_limits(client: TestClient) -> None:
    assert client.post("/v1/docs", json={"ids": []}).status_code == 422
    assert client.post("/v1/docs", json={"ids": [f"a:{i}" for i in range(101)]}).status_code == 422
