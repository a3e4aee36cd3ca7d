"""GET /v1/changes and MCP `changes`: what publishes added, modified and removed, newest first, paginated, of
the documents the caller may see (on the access an entry recorded and on its document's access now)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import psycopg
import pytest
from fastapi.testclient import TestClient

from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Record
from pipeline.store import Access, SourceRow, Store
from secrag.db import database
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.integration.serving.test_mcp import call, rpc


def rule(source: str, i: int, body: str = "") -> Record:
    return Record(source=source, upstream_id=f"r{i}", title=f"{source} rule {i}", body=body or f"Detects thing {i}.")


def publish(conn: psycopg.Connection, source: str, version: str, records: list[Record], **kw: object) -> None:
    Store(sql_dir()).publish(
        conn, source=source, version=version, records=records, lookup={}, chunking=ChunkConfig(), **kw
    )  # type: ignore[arg-type]


@pytest.fixture
def feed(db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[tuple[TestClient, datetime]]:
    """sigma: v1 (3 rules), then v2 (r1 modified, r2 removed, r3 added); two acme folders; (client, time of v1)."""
    store = Store(sql_dir())
    with database.connect(db_url, autocommit=True) as conn:
        store.register_source(conn, SourceRow(name="sigma", kind="online", tracking="commit", poll_interval=180))
        publish(conn, "sigma", "c1", [rule("sigma", i) for i in range(3)])
        between = datetime.now(UTC)
        publish(conn, "sigma", "c2", [rule("sigma", 0), rule("sigma", 1, "Detects more."), rule("sigma", 3)])
        for name in ("alice_notes", "acme_wide"):
            store.register_source(conn, SourceRow(name=name, kind="user_folder"))
        publish(
            conn,
            "alice_notes",
            "h1",
            [rule("alice_notes", 1), rule("alice_notes", 2)],
            access=Access("acme", ("alice",)),
        )
        publish(conn, "alice_notes", "h2", [rule("alice_notes", 1)], access=Access("acme", ("alice",)))
        publish(conn, "acme_wide", "h1", [rule("acme_wide", 1)], access=Access("acme"))
        # Narrowed to alice: bob (acme) no longer sees the document, so not its earlier entry either.
        publish(conn, "acme_wide", "h2", [rule("acme_wide", 1)], access=Access("acme", ("alice",)))
    with TestClient(create_app(settings_for(db_url))) as client:
        yield client, between


def changes(client: TestClient, key: str | None = None, **params: object) -> dict:
    response = client.get("/v1/changes", params=params, headers={"X-API-Key": key} if key else {})
    assert response.status_code == 200, response.text
    return response.json()


def test_changes_newest_first_with_versions_and_titles(feed) -> None:
    client, _ = feed
    listed = changes(client)["changes"]
    assert [(c["doc_id"], c["change"], c["old_version"], c["new_version"]) for c in listed] == [
        ("sigma:r1", "modified", "c1", "c2"),  # a publish records removals, additions, then modifications
        ("sigma:r3", "added", "c1", "c2"),
        ("sigma:r2", "removed", "c1", "c2"),
        ("sigma:r2", "added", None, "c1"),
        ("sigma:r1", "added", None, "c1"),
        ("sigma:r0", "added", None, "c1"),
    ]  # an anonymous caller sees no folder
    assert listed[2]["title"] == "sigma rule 2" and listed[0]["changed_at"]


def test_private_changes_follow_the_access_of_the_entry_and_of_the_document(feed) -> None:
    client, _ = feed
    mine = {
        (c["doc_id"], c["change"]) for c in changes(client, "alice-key", sources="alice_notes,acme_wide")["changes"]
    }
    assert mine == {
        ("alice_notes:r1", "added"),
        ("alice_notes:r2", "added"),
        ("alice_notes:r2", "removed"),  # removed: judged by the access it had
        ("acme_wide:r1", "added"),
        ("acme_wide:r1", "modified"),  # its access changed
    }
    bobs = {c["doc_id"] for c in changes(client, "bob-key")["changes"]}
    assert not {d for d in bobs if not d.startswith("sigma:")}  # acme, but neither alice's nor since narrowed
    assert not [c for c in changes(client, "gina-key")["changes"] if not c["source"] == "sigma"]


def test_since_a_time_or_a_version(feed) -> None:
    client, between = feed
    after_time = changes(client, since=between.isoformat())["changes"]
    after_version = changes(client, since="c1", sources="sigma")["changes"]
    assert (
        after_time == after_version and {c["new_version"] for c in after_version} == {"c2"} and len(after_version) == 3
    )
    assert changes(client, since="c2", sources=["sigma"])["changes"] == []
    naive = between.replace(tzinfo=None).isoformat()  # read as UTC
    assert changes(client, since=naive)["changes"] == after_time


def test_pages_follow_the_cursor(feed) -> None:
    client, _ = feed
    everything = changes(client, limit=1000)["changes"]
    seen, cursor = [], None
    while True:
        page = changes(client, limit=4, **({"cursor": cursor} if cursor else {}))
        seen += page["changes"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == everything and len(everything) == 6


@pytest.mark.parametrize(
    "params, loc",
    [
        ({"sources": "sigma,nope"}, ["query", "sources", 1]),
        ({"cursor": "-3"}, ["query", "cursor"]),
        ({"cursor": "9999999999999999999"}, ["query", "cursor"]),  # past bigint: was a 500 (SQLSTATE 22003)
        ({"cursor": str(2**63)}, ["query", "cursor"]),
        ({"limit": 1001}, ["query", "limit"]),
    ],
)
def test_bad_parameters_are_422_with_a_kind(feed, params: dict, loc: list) -> None:
    client, _ = feed
    response = client.get("/v1/changes", params=params)
    body = response.json()
    assert response.status_code == 422 and set(body) == {"detail", "kind"}
    assert body["detail"][0]["loc"] == loc


def test_the_largest_cursor_is_a_page(feed) -> None:
    client, _ = feed
    assert client.get("/v1/changes", params={"cursor": str(2**63 - 1)}).status_code == 200


def test_the_mcp_tool_refuses_a_cursor_past_bigint(feed) -> None:
    client, _ = feed
    result = rpc(client, "tools/call", {"name": "changes", "arguments": {"cursor": "9999999999999999999"}})["result"]
    body = json.loads(result["content"][0]["text"])
    assert result["isError"] and body["kind"] == "validation" and "9223372036854775807" in body["detail"][0]["msg"]


def test_a_version_never_published_is_404_with_a_kind(feed) -> None:
    client, _ = feed
    response = client.get("/v1/changes", params={"since": "no-such-version"})
    assert response.status_code == 404 and response.json()["kind"] == "not_found"


def test_the_mcp_tool_lists_the_same(feed) -> None:
    client, _ = feed
    assert call(client, "changes", "alice-key", sources=["alice_notes"]) == changes(
        client, "alice-key", sources="alice_notes"
    )


@pytest.fixture
def narrowed(db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    """acme_later: narrowed to alice, then r2 removed; acme_at_once: narrowed to alice as r2 is removed;
    acme_kept: narrowed and widened again while r2's file could not be read (no entry), then r2 removed."""
    store = Store(sql_dir())
    acme, alice = Access("acme"), Access("acme", ("alice",))
    with database.connect(db_url, autocommit=True) as conn:
        for name in ("acme_later", "acme_at_once", "acme_kept"):
            store.register_source(conn, SourceRow(name=name, kind="user_folder"))
            publish(conn, name, "h1", [rule(name, 1), rule(name, 2)], access=acme)
        publish(conn, "acme_later", "h2", [rule("acme_later", 1), rule("acme_later", 2)], access=alice)
        publish(conn, "acme_later", "h3", [rule("acme_later", 1)], access=alice)
        publish(conn, "acme_at_once", "h2", [rule("acme_at_once", 1)], access=alice)
        for version, access in (("h2", alice), ("h3", acme)):
            publish(conn, "acme_kept", version, [rule("acme_kept", 1)], access=access, kept=["acme_kept:r2"])
        publish(conn, "acme_kept", "h4", [rule("acme_kept", 1)], access=acme)
    with TestClient(create_app(settings_for(db_url))) as client:
        yield client


def test_a_removed_document_keeps_the_narrowest_access_it_had(narrowed) -> None:
    bobs = {(c["doc_id"], c["change"]) for c in changes(narrowed, "bob-key")["changes"]}
    # acme, not alice: of no folder r2's removal nor its earlier entries; acme_kept's r1 is acme's again
    assert bobs == {("acme_kept:r1", "added"), ("acme_kept:r1", "modified")}
    alices = {(c["doc_id"], c["change"]) for c in changes(narrowed, "alice-key", sources="acme_later")["changes"]}
    assert alices == {
        ("acme_later:r1", "added"),
        ("acme_later:r2", "added"),
        ("acme_later:r1", "modified"),
        ("acme_later:r2", "modified"),
        ("acme_later:r2", "removed"),
    }


def test_narrowing_and_removing_at_once_records_the_removal_narrowed(db_url: str, narrowed) -> None:
    with database.connect(db_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT tenant, acl_users FROM document_changes WHERE doc_id = 'acme_at_once:r2' AND change = 'removed'"
        ).fetchone()
    assert row == ("acme", ["alice"])
    alices = {(c["doc_id"], c["change"]) for c in changes(narrowed, "alice-key", sources="acme_at_once")["changes"]}
    assert alices == {
        ("acme_at_once:r1", "added"),
        ("acme_at_once:r2", "added"),
        ("acme_at_once:r1", "modified"),  # its access changed
        ("acme_at_once:r2", "removed"),
    }
