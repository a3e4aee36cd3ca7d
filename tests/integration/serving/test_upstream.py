"""GET /v1/docs/{doc_id}/upstream and POST /v1/docs/upstream: one record's upstream form at its published
version, from the store or live, capped in size and time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from tests.plugins.upstream import SNAPSHOT, LoopbackPolicy


def _sigma_doc(url: str) -> tuple[str, str, str]:
    with database.connect(url) as conn:
        row = conn.execute(
            "SELECT doc_id, source_version, upstream_path FROM documents WHERE source = 'sigma' ORDER BY doc_id LIMIT 1"
        ).fetchone()
    assert row is not None
    return row


@pytest.fixture
def app_with(serving_db_url: str, settings_for: Callable[..., Any]) -> Iterator[Callable[..., TestClient]]:
    opened: list[TestClient] = []

    def make(**overrides: Any) -> TestClient:  # noqa: ANN401
        settings = settings_for(serving_db_url, mcp_enabled=False, **overrides)
        client = TestClient(create_app(settings, url_policy=LoopbackPolicy()))
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def test_every_published_document_records_its_upstream_path(serving_db_url: str) -> None:
    with psycopg.connect(serving_db_url) as conn:
        missing = conn.execute(
            "SELECT count(*) FROM documents d JOIN sources s ON s.name = d.source "
            "WHERE s.kind = 'online' AND d.upstream_path IS NULL"
        ).fetchone()[0]
    assert missing == 0


def _one(url: str, sql: str) -> Any:  # noqa: ANN401
    with database.connect(url) as conn:
        row = conn.execute(sql).fetchone()
    assert row is not None
    return row[0]


def test_the_stored_form_needs_no_upstream(
    app_with: Callable[..., TestClient], serving_db_url: str, http_server: Any
) -> None:  # noqa: ANN401
    """By default the record comes from the store: a Sigma rule is its file, byte for byte, at the published
    version, with no request to the upstream."""
    doc_id, version, path = _sigma_doc(serving_db_url)
    client = app_with(upstream_raw_base=http_server.base_url)
    body = client.get(f"/v1/docs/{doc_id}/upstream").json()
    assert (body["doc_id"], body["version"], body["path"], body["origin"]) == (doc_id, version, path, "store")
    assert body["content"] == (SNAPSHOT / "sigma" / path).read_text()
    assert body["size"] == (SNAPSHOT / "sigma" / path).stat().st_size
    assert body["media_type"] == "application/yaml" and body["record"]["title"]
    assert http_server.hits(f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}") == []


def test_one_record_of_a_bundle_or_feed_is_exactly_that_record(app_with: Callable[..., TestClient]) -> None:
    """ATT&CK's bundle is over the 8 MiB cap and CAPEC's is 4.8 MB; each document's upstream form is its
    own STIX object (and a KEV entry, an Atomic test), the same object a live read picks out of the file."""
    client = app_with(upstream_mirror=SNAPSHOT)
    technique = client.get("/v1/docs/mitre_attack:T1003/upstream").json()
    assert technique["record"]["type"] == "attack-pattern" and technique["size"] < 100_000
    assert any(r.get("external_id") == "T1003" for r in technique["record"]["external_references"])
    live = client.get("/v1/docs/mitre_attack:T1003/upstream", params={"live": "true"})
    assert live.status_code == 413 and "cap" in live.json()["detail"]  # the bundle itself
    for doc_id, key, value in (
        ("capec:CAPEC-66", "type", "attack-pattern"),
        ("cisa_kev:CVE-2021-44228", "cveID", "CVE-2021-44228"),
    ):
        stored = client.get(f"/v1/docs/{doc_id}/upstream").json()
        fresh = client.get(f"/v1/docs/{doc_id}/upstream", params={"live": "true"}).json()
        assert stored["record"][key] == value and stored["media_type"] == "application/json"
        assert (stored["origin"], fresh["origin"]) == ("store", "live")
        assert fresh["record"] == stored["record"] and fresh["fetched_from"].startswith("mirror:")
    atomic = client.get("/v1/docs/atomic:" + _atomic_guid(client) + "/upstream").json()
    assert atomic["record"]["auto_generated_guid"] == atomic["doc_id"].split(":", 1)[1]
    fresh = client.get(f"/v1/docs/{atomic['doc_id']}/upstream", params={"live": "true"}).json()
    assert fresh["record"] == atomic["record"]


def _atomic_guid(client: TestClient) -> str:
    hits = client.post("/v1/search", json={"query": "lsass", "filters": {"sources": ["atomic"]}, "k": 1}).json()
    return str(hits["results"][0]["doc_id"].split(":", 1)[1])


def test_columns_keep_top_level_keys(app_with: Callable[..., TestClient], serving_db_url: str) -> None:
    doc_id, _, _ = _sigma_doc(serving_db_url)
    client = app_with()
    body = client.get(f"/v1/docs/{doc_id}/upstream", params=[("columns", "title"), ("columns", "nope")]).json()
    assert set(body["record"]) == {"title"} and body["missing_columns"] == ["nope"] and body["content"] == ""
    d3fend = client.get("/v1/docs/mitre_d3fend:D3-AL/upstream", params={"columns": "label"})
    assert d3fend.status_code == 422 and "text/turtle" in json.dumps(d3fend.json())
    assert client.get("/v1/docs/mitre_d3fend:D3-AL/upstream").json()["content"].count("d3fend-id") == 1


def test_batch_refetch(app_with: Callable[..., TestClient], serving_db_url: str) -> None:
    doc_id, _, _ = _sigma_doc(serving_db_url)
    client = app_with(upstream_mirror=SNAPSHOT, max_live_refetch=2)
    ids = [doc_id, "mitre_attack:T1003", "mitre_attack:T9999", "globex_notes:note-0", doc_id]
    body = client.post("/v1/docs/upstream", json={"doc_ids": ids, "columns": ["name", "title"]}).json()
    assert [r["doc_id"] for r in body["records"]] == [doc_id, "mitre_attack:T1003"]
    assert body["records"][1]["record"] == {"name": "OS Credential Dumping"}
    assert body["missing"] == ["mitre_attack:T9999", "globex_notes:note-0"] and body["errors"] == []
    live = client.post("/v1/docs/upstream", json={"doc_ids": [doc_id, "mitre_attack:T1003"], "live": True}).json()
    assert [r["doc_id"] for r in live["records"]] == [doc_id]
    assert [(e["doc_id"], e["status"]) for e in live["errors"]] == [("mitre_attack:T1003", 413)]
    # A request the schema admits is answered: the ids beyond the live cap are errors of their own.
    over = client.post("/v1/docs/upstream", json={"doc_ids": [doc_id, "a:1", "b:2"], "live": True})
    assert over.status_code == 200 and over.json()["missing"] == ["a:1"]
    [beyond] = over.json()["errors"]
    assert (beyond["doc_id"], beyond["status"]) == ("b:2", 429) and "SECRAG_MAX_LIVE_REFETCH" in beyond["error"]
    capped = app_with(max_response_bytes=4096).post(
        "/v1/docs/upstream", json={"doc_ids": [doc_id] * 1 + ["capec:CAPEC-66"]}
    )
    assert capped.json()["truncated"] is True


def test_a_document_without_a_stored_form_says_so(app_with: Callable[..., TestClient], serving_db_url: str) -> None:
    """A document published before migration 0013 has no stored form until its source is republished."""
    doc_id = "cisa_kev:CVE-2017-0144"
    with database.connect(serving_db_url, autocommit=True) as conn:
        saved = conn.execute("SELECT * FROM document_raw WHERE doc_id = %s", [doc_id]).fetchone()
        conn.execute("DELETE FROM document_raw WHERE doc_id = %s", [doc_id])
    try:
        client = app_with(upstream_mirror=SNAPSHOT)
        response = client.get(f"/v1/docs/{doc_id}/upstream")
        assert response.status_code == 501 and "live=true" in response.json()["detail"]
        assert client.get(f"/v1/docs/{doc_id}/upstream", params={"live": "true"}).json()["record"]["cveID"] == (
            "CVE-2017-0144"
        )
    finally:
        with database.connect(serving_db_url, autocommit=True) as conn:
            conn.execute("INSERT INTO document_raw VALUES (%s, %s, %s, %s, %s)", list(saved))


def test_raw_file_over_http_at_the_recorded_version(
    app_with: Callable[..., TestClient], serving_db_url: str, http_server: Any
) -> None:  # noqa: ANN401
    doc_id, version, path = _sigma_doc(serving_db_url)
    data = (SNAPSHOT / "sigma" / path).read_bytes()
    http_server.bytes(f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}", data)
    client = app_with(upstream_raw_base=http_server.base_url)
    body = client.get(f"/v1/docs/{doc_id}/upstream", params={"live": "true"}).json()
    assert body["content"].encode() == data and body["fetched_from"].startswith(http_server.base_url)
    assert body["origin"] == "live"


@pytest.mark.parametrize(
    "arrange, status",
    [
        (lambda s, p: s.bytes(p, b"gone", status=500), 502),
        (lambda s, p: s.bytes(p, b"nope", status=404), 502),
        (lambda s, p: s.redirect(p, "https://elsewhere.example/"), 502),
        (lambda s, p: s.oversized(p, 64 * 1024), 413),
        (lambda s, p: s.oversized(p, 64 * 1024, content_length=False), 413),
    ],
)
def test_upstream_failures_are_clean(
    app_with: Callable[..., TestClient],
    serving_db_url: str,
    http_server: Any,
    arrange: Callable[[Any, str], None],
    status: int,
) -> None:  # noqa: ANN401
    doc_id, version, path = _sigma_doc(serving_db_url)
    arrange(http_server, f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}")
    response = app_with(upstream_raw_base=http_server.base_url, upstream_max_bytes=16 * 1024).get(
        f"/v1/docs/{doc_id}/upstream", params={"live": "true"}
    )
    assert response.status_code == status
    assert "Traceback" not in response.text and "127.0.0.1" not in json.dumps(response.json())


def test_hanging_upstream_is_504_within_the_cap(
    app_with: Callable[..., TestClient], serving_db_url: str, http_server: Any
) -> None:  # noqa: ANN401
    doc_id, version, path = _sigma_doc(serving_db_url)
    raw = f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}"
    http_server.hang(raw, seconds=60)
    client = app_with(upstream_raw_base=http_server.base_url, upstream_timeout=1.0)
    response = client.get(f"/v1/docs/{doc_id}/upstream", params={"live": "true"})
    assert response.status_code == 504
    # The cap came first: the upstream still held the request.
    assert http_server.hits(raw) and http_server.statuses(raw) == []


def test_refetch_honours_the_url_policy(
    serving_db_url: str, settings_for: Callable[..., Any], http_server: Any
) -> None:  # noqa: ANN401
    """Without the tests' loopback allowance, a raw base on loopback is refused before any request."""
    doc_id, version, path = _sigma_doc(serving_db_url)
    route = f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}"
    http_server.bytes(route, b"title: x\n")
    settings = settings_for(serving_db_url, mcp_enabled=False, upstream_raw_base=http_server.base_url)
    with TestClient(create_app(settings)) as client:
        response = client.get(f"/v1/docs/{doc_id}/upstream", params={"live": "true"})
    assert response.status_code == 502
    assert http_server.hits(route) == []


def test_invisible_and_unknown_documents_are_404(app_with: Callable[..., TestClient]) -> None:
    client = app_with(upstream_mirror=SNAPSHOT)
    assert client.get("/v1/docs/mitre_attack:T9999/upstream").status_code == 404
    assert client.get("/v1/docs/globex_notes:note-0/upstream").status_code == 404  # another tenant's


def test_a_record_nothing_names_in_its_file_is_stored_not_live(app_with: Callable[..., TestClient]) -> None:
    """An ECS field set is a slice of the flat file, not one entry: its stored form is exact, a live read
    cannot pick it out (501, not a misleading 502)."""
    client = app_with(upstream_mirror=SNAPSHOT)
    stored = client.get("/v1/docs/ecs:process/upstream").json()
    assert stored["origin"] == "store" and "process.pid" in stored["record"]
    live = client.get("/v1/docs/ecs:process/upstream", params={"live": "true"})
    assert live.status_code == 501 and "stored form" in live.json()["detail"]
