"""GET /v1/docs/{doc_id}/upstream: the authoritative record at the recorded version, capped in size and time."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from fastapi.testclient import TestClient

from secrag import database
from serving.app import create_app
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


def test_file_from_the_mirror_is_byte_identical(app_with: Callable[..., TestClient], serving_db_url: str) -> None:
    doc_id, version, path = _sigma_doc(serving_db_url)
    body = app_with(upstream_mirror=SNAPSHOT).get(f"/v1/docs/{doc_id}/upstream").json()
    assert (body["doc_id"], body["version"], body["path"]) == (doc_id, version, path)
    assert body["content"] == (SNAPSHOT / "sigma" / path).read_text()
    assert body["size"] == (SNAPSHOT / "sigma" / path).stat().st_size


def test_feed_record_is_picked_by_id(app_with: Callable[..., TestClient]) -> None:
    body = app_with(upstream_mirror=SNAPSHOT).get("/v1/docs/cisa_kev:CVE-2021-44228/upstream").json()
    assert body["record"]["cveID"] == "CVE-2021-44228" and body["content"] == ""


def test_oversized_upstream_is_413(app_with: Callable[..., TestClient]) -> None:
    response = app_with(upstream_mirror=SNAPSHOT).get("/v1/docs/mitre_attack:T1003/upstream")
    assert response.status_code == 413 and "cap" in response.json()["detail"]


def test_raw_file_over_http_at_the_recorded_version(
    app_with: Callable[..., TestClient], serving_db_url: str, http_server: Any
) -> None:  # noqa: ANN401
    doc_id, version, path = _sigma_doc(serving_db_url)
    data = (SNAPSHOT / "sigma" / path).read_bytes()
    http_server.bytes(f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}", data)
    client = app_with(upstream_raw_base=http_server.base_url)
    body = client.get(f"/v1/docs/{doc_id}/upstream").json()
    assert body["content"].encode() == data and body["fetched_from"].startswith(http_server.base_url)


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
        f"/v1/docs/{doc_id}/upstream"
    )
    assert response.status_code == status
    assert "Traceback" not in response.text and "127.0.0.1" not in json.dumps(response.json())


def test_hanging_upstream_is_504_within_the_cap(
    app_with: Callable[..., TestClient], serving_db_url: str, http_server: Any
) -> None:  # noqa: ANN401
    doc_id, version, path = _sigma_doc(serving_db_url)
    http_server.hang(f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}", seconds=10)
    client = app_with(upstream_raw_base=http_server.base_url, upstream_timeout=1.0)
    started = time.monotonic()
    response = client.get(f"/v1/docs/{doc_id}/upstream")
    assert response.status_code == 504
    assert time.monotonic() - started < 5  # generous bound: the cap is 1 s


def test_refetch_honours_the_url_policy(
    serving_db_url: str, settings_for: Callable[..., Any], http_server: Any
) -> None:  # noqa: ANN401
    """Without the tests' loopback allowance, a raw base on loopback is refused before any request."""
    doc_id, version, path = _sigma_doc(serving_db_url)
    route = f"/SigmaHQ/sigma/{quote(version, safe='')}/{quote(path)}"
    http_server.bytes(route, b"title: x\n")
    settings = settings_for(serving_db_url, mcp_enabled=False, upstream_raw_base=http_server.base_url)
    with TestClient(create_app(settings)) as client:
        response = client.get(f"/v1/docs/{doc_id}/upstream")
    assert response.status_code == 502
    assert http_server.hits(route) == []


def test_invisible_and_unknown_documents_are_404(app_with: Callable[..., TestClient]) -> None:
    client = app_with(upstream_mirror=SNAPSHOT)
    assert client.get("/v1/docs/mitre_attack:T9999/upstream").status_code == 404
    assert client.get("/v1/docs/globex_notes:note-0/upstream").status_code == 404  # another tenant's
