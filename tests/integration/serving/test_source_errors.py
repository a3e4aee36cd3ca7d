"""Callers see error kinds, operators see everything: every way a refresh fails, through /v1/sources and MCP.

Each failure path (a probe of a local mirror that is gone, a fetch of a commit git does not know, a parse
error naming a file, a psycopg error in publish, an exception that is not secrag's) is run for real by
refresh_source; the public answers are then scanned for paths, URLs, hosts, SQL and library names,
while the full text stays readable to the store's owner.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from pipeline.chunking import ChunkConfig
from pipeline.refresh import RefreshFailed, RefreshLimits, refresh_source
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from pipeline.store import Store
from secrag.db import database
from secrag.db.queries import Queries
from secrag.error_kinds import MESSAGES
from secrag.errors import ParseError
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.integration.serving.test_mcp import call

SOURCES = ["hijacklibs", "lolbas", "gtfobins", "loldrivers", "mitre_car"]
# What no public answer may carry: absolute paths, URLs, SQL, library and driver names, git's words.
LEAKS = re.compile(
    r"(file://|https?://|/tmp/|/srv/|/home/|/var/|\bSELECT\b|\bINSERT\b|duplicate key|psycopg|"
    r"postgres|Traceback|fatal:|git |KeyError|\.py\b|\.yml\b)",
    re.IGNORECASE,
)


@pytest.fixture
def failed_store(
    db_url: str,
    tmp_path: Path,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
    upstream_config: Callable[..., UpstreamConfig],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[str]:
    """A store where each source published once, then failed its last attempt in its own way."""
    mirror = mirror_factory(SOURCES)
    limits = RefreshLimits(ChunkConfig(), max_shrink=0.5, max_error_share=0.2, work_dir=tmp_path)
    store, queries = Store(sql_dir()), Queries(sql_dir(), "pipeline")
    with database.connect(db_url, autocommit=True) as conn:

        def refresh(spec: SourceSpec, **kw: Any) -> object:  # noqa: ANN401
            upstream = OnlineUpstream(upstream_config(mirror, **kw.pop("config", {})))
            return refresh_source(spec, upstream, conn, store, queries, limits, **kw)

        for name in SOURCES:
            refresh(source_specs[name])
        changed = {n: dataclasses.replace(source_specs[n], parser_version="x") for n in SOURCES}

        gone = (tmp_path / "secret-mirror" / "gone.git").as_uri()  # a local mirror's absolute path
        with pytest.raises(RefreshFailed):
            refresh(changed["hijacklibs"], config={"repo_overrides": {"hijacklibs": gone}})
        with pytest.raises(RefreshFailed):  # git's stderr names the commit and the repository path
            refresh(changed["lolbas"], pin="0123456789abcdef0123456789abcdef01234567")

        def bad_file(*_a: object, **_k: object) -> None:
            raise ParseError(f"{tmp_path}/checkout/yml/x.yml: mapping values are not allowed here", path="x.yml")

        monkeypatch.setattr("pipeline.refresh.parse_source", bad_file)
        with pytest.raises(RefreshFailed):
            refresh(changed["gtfobins"])
        monkeypatch.undo()

        def broken_publish(*_a: object, **_k: object) -> None:
            raise psycopg.errors.UniqueViolation(
                'duplicate key value violates unique constraint "documents_pkey" '
                "DETAIL: Key (doc_id)=(loldrivers:x) already exists. CONTEXT: SQL statement INSERT INTO documents"
            )

        monkeypatch.setattr(Store, "publish", broken_publish)
        with pytest.raises(RefreshFailed):
            refresh(changed["loldrivers"])
        monkeypatch.undo()

        def not_ours(*_a: object, **_k: object) -> None:
            raise KeyError("/srv/secrag/work/mitre_car-abc/checkout")

        monkeypatch.setattr("pipeline.refresh.parse_source", not_ours)
        with pytest.raises(KeyError):
            refresh(changed["mitre_car"])
    yield db_url


@pytest.fixture
def api(failed_store: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(failed_store))) as client:
        yield client


def _without_upstream(sources: list[dict[str, Any]]) -> str:
    """The answer as text, less each source's `upstream` (the registry's public repository URL)."""
    return json.dumps([{k: v for k, v in s.items() if k != "upstream"} for s in sources])


def test_the_public_answers_name_kinds_and_nothing_else(api: TestClient, failed_store: str) -> None:
    listed = api.get("/v1/sources")
    assert listed.status_code == 200
    sources = {s["name"]: s for s in listed.json()["sources"] if s["name"] in SOURCES}
    kinds = {name: (s["state"], s["error_kind"], s["last_attempt"]["phase"]) for name, s in sources.items()}
    assert kinds == {
        "hijacklibs": ("failed", "probe_failed", "probe"),
        "lolbas": ("failed", "fetch_failed", "fetch"),
        "gtfobins": ("failed", "parse_failed", "parse"),
        "loldrivers": ("failed", "database_error", "publish"),
        "mitre_car": ("failed", "internal_error", "parse"),
    }
    for s in sources.values():
        assert s["last_error"] == s["last_attempt"]["reason"] == MESSAGES[s["error_kind"]]
        assert s["version"] and s["records"] > 0  # what was published before stays served
    text = _without_upstream(list(sources.values()))
    assert not LEAKS.search(text), LEAKS.search(text)

    tool = call(api, "list_sources")
    mcp = [s for s in tool["sources"] if s["name"] in SOURCES]
    assert {s["name"]: s["error_kind"] for s in mcp} == {n: k[1] for n, k in kinds.items()}
    assert not LEAKS.search(_without_upstream(mcp))

    # The operators keep every word: the owner reads the full text the reader role never gets.
    with database.connect(failed_store, autocommit=True) as conn:
        details = dict(
            conn.execute(
                "SELECT st.name, v.error_detail FROM source_status st JOIN source_versions v ON v.id = st.attempt_id"
            ).fetchall()
        )
    assert "secret-mirror" in details["hijacklibs"] and "duplicate key" in details["loldrivers"]
    assert "/srv/secrag/work" in details["mitre_car"] and "x.yml" in details["gtfobins"]


def test_every_error_body_carries_a_kind(api: TestClient) -> None:
    answers = [
        api.get("/v1/docs/no-such-doc"),
        api.post("/v1/search", json={"query": ""}),
        api.post("/v1/search", json={"query": "x", "sources": ["no_such_source"]}),
        api.get("/v1/no-such-route"),
        api.get("/v1/search"),
    ]
    for answer in answers:
        body = answer.json()
        assert answer.status_code >= 400 and set(body) == {"detail", "kind"}, body
        assert re.fullmatch(r"[a-z_]+", body["kind"]) and not LEAKS.search(json.dumps(body))
