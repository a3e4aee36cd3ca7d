"""Reads from a streaming replica: the API reads a hot standby (pg_basebackup -R of a primary, both real servers
of the embedded distribution) while publishes go to the primary; a publish reaches the API within the replay
lag plus the result cache's interval, a cached response is never older than the data it is keyed by, and
/readyz and /metrics report the lag (turning not ready past SECRAG_REPLICA_MAX_LAG_SECONDS)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from psycopg import sql

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from secrag.db import database, migrations
from secrag.errors import ConfigError
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.search.encoder import shared_encoder
from serving.settings import ServingSettings
from tests.plugins.replication import Replication, Server, primary_and_standby

log = logging.getLogger(__name__)
SQL_DIR = sql_dir()
MODEL = "all-MiniLM-L6-v2"
SOURCE = "replica_notes"
DB = "secrag"
HUNG = 120.0  # bounds a hung test only: the tests wait for events (a replay, a read of the data version)


def _records(extra: int = 0) -> list[Record]:
    """A few notes; `extra` more, each naming a word no other record has, to watch a publish arrive."""
    notes = [
        Record(
            source=SOURCE,
            upstream_id=f"note-{i}",
            title=f"Replica note {i}: LSASS memory dump with procdump",
            body=f"Note {i}. Credential dumping (T1003.001) by reading LSASS memory with procdump or comsvcs.dll; "
            "detect the process access to lsass.exe and the minidump written to disk.",
            techniques=("T1003.001",),
            platforms=("windows",),
        )
        for i in range(4)
    ]
    notes += [
        Record(
            source=SOURCE,
            upstream_id=f"late-{i}",
            title=f"Late note {i} about quokkaburrow{i}",
            body=f"Published while the API reads a standby: the word quokkaburrow{i} appears nowhere else.",
        )
        for i in range(extra)
    ]
    return notes


def _publish(url: str, version: str, extra: int = 0) -> None:
    """What the pipeline does on the primary: publish the source's records, then embed what is new."""
    store = Store(SQL_DIR)
    with database.connect(url, autocommit=True) as conn:
        store.register_source(conn, SourceRow(name=SOURCE, kind="online", description="notes for replica tests"))
        store.publish(conn, source=SOURCE, version=version, records=_records(extra), lookup={}, chunking=ChunkConfig())
        embed_pending(conn, shared_encoder(MODEL).embedder, SQL_DIR, batch_size=64)


def _prepare(primary: Server) -> None:
    """The primary migrated (roles and the reader's grants included, replicated as they are) and published."""
    with database.connect(primary.url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
    with database.connect(primary.url(DB), autocommit=True) as conn:
        database.check_requirements(conn)
        migrations.migrate(conn, SQL_DIR)
    _publish(primary.url(DB), "v1")


@pytest.fixture(scope="module")
def replication() -> Iterator[Replication]:
    with primary_and_standby(_prepare) as pair:
        pair.wait_for_replay()
        yield pair


@pytest.fixture(scope="module")
def replica_settings(replication: Replication, settings_for: Callable[..., ServingSettings]) -> Callable[..., Any]:
    """The API's settings as a deployment sets them: the pipeline's URL is the primary, the reader's the standby."""

    def make(**overrides: Any) -> ServingSettings:  # noqa: ANN401
        values = {
            "reader_database_url": replication.standby.url(DB, "secrag_reader"),
            "mcp_enabled": False,
            "result_cache_size": 64,
            **overrides,
        }
        return settings_for(replication.primary.url(DB), **values)

    return make


@pytest.fixture(scope="module")
def api(replica_settings: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(replica_settings())) as client:
        yield client


def _search(api: TestClient, query: str, **body: Any) -> list[str]:  # noqa: ANN401
    response = api.post("/v1/search", json={"query": query, "k": 5, **body})
    assert response.status_code == 200, response.text
    return [r["doc_id"] for r in response.json()["results"]]


def _until(check: Callable[[], bool], what: str) -> None:
    """Until `check` holds (polled); HUNG bounds a hung test only."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < HUNG, f"never: {what}"
        time.sleep(0.05)


def _data_version_read_after(api: TestClient, moment: float, query: str) -> None:
    """Searches until the API has read the data version in a read that started after `moment` (a search reads it
    once it is older than the catalog's DATA_VERSION_TTL): the reads are one at a time, so the one after a read
    that ended after `moment` started after it."""
    cached = api.app.state.service.catalog._data_version  # type: ignore[attr-defined]
    ended: set[float] = set()

    def read_since() -> bool:
        _search(api, query, mode="fts")
        if cached.at > moment:
            ended.add(cached.at)
        return len(ended) >= 2

    _until(read_since, "the data version read again")


def _metric(api: TestClient, name: str) -> float:
    text = api.get("/metrics").text
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


def test_searches_documents_sources_and_stats_are_served_by_the_standby(
    api: TestClient, replication: Replication
) -> None:
    with api.app.state.service.pool.connection() as conn:  # type: ignore[attr-defined]
        assert conn.execute("SELECT pg_is_in_recovery(), current_user").fetchone() == (True, "secrag_reader")
    replication.primary.stop()  # nothing below can come from the primary
    try:
        assert f"{SOURCE}:note-0" in _search(api, "lsass memory dump procdump")
        assert f"{SOURCE}:note-1" in _search(api, "credential dumping", mode="vector")
        assert api.get(f"/v1/docs/{SOURCE}:note-2").json()["title"].startswith("Replica note 2")
        sources = {s["name"]: s for s in api.get("/v1/sources").json()["sources"]}
        assert sources[SOURCE]["records"] == 4 and sources[SOURCE]["version"] == "v1"
        stats = api.get("/v1/stats").json()
        assert stats["sources"][SOURCE]["documents"] == 4 and stats["sources"][SOURCE]["chunks_embedded"] >= 4
        ready = api.get("/readyz").json()
        assert ready["replica"]["standby"] is True  # its lag grows while the primary is away (readiness aside)
        assert _metric(api, "secrag_replica_standby") == 1
    finally:
        replication.primary.start()
    replication.wait_for_replay()


def test_a_publish_on_the_primary_reaches_the_api_once_replayed_and_its_data_version_read(
    api: TestClient, replication: Replication
) -> None:
    """Published on the primary, replayed by the standby, then the API's next read of the data version: from
    then on its answers hold the publish (the empty answer cached before it is not served again)."""
    assert _search(api, "quokkaburrow0", mode="fts") == []  # and now cached under the current data version
    _publish(replication.primary.url(DB), "v2", extra=1)
    replication.wait_for_replay(HUNG)
    _data_version_read_after(api, time.monotonic(), "quokkaburrow0")
    assert _search(api, "quokkaburrow0", mode="fts") == [f"{SOURCE}:late-0"]
    assert api.get(f"/v1/docs/{SOURCE}:late-0").status_code == 200
    versions = {s["name"]: s["version"] for s in api.get("/v1/sources").json()["sources"]}
    assert versions[SOURCE] == "v2"


def test_the_result_cache_never_serves_a_result_older_than_the_replayed_data(
    api: TestClient, replication: Replication
) -> None:
    query = {"query": "quokkaburrow1", "mode": "fts"}
    data_version = api.app.state.service.catalog._data_version  # type: ignore[attr-defined]
    with replication.replay_paused():
        assert _search(api, **query) == []  # cached, keyed by the version the standby has replayed
        _publish(replication.primary.url(DB), "v3", extra=2)
        replication.wait_for_receipt()  # the standby holds v3's WAL and cannot replay it
        received = time.monotonic()

        def read_again_since() -> bool:
            assert _search(api, **query) == []  # right: the standby has not replayed v3
            return data_version.at > received  # the search's key was read from the paused standby, after v3 came

        _until(read_again_since, "the data version read again after v3 reached the standby")
    replication.wait_for_replay(HUNG)
    # Once the standby has replayed v3 and the API has read its data version, the cached empty answer is not served.
    _data_version_read_after(api, time.monotonic(), query["query"])
    assert _search(api, **query) == [f"{SOURCE}:late-1"]


def test_a_fresh_response_is_kept_under_the_version_its_own_connection_read(api: TestClient) -> None:
    """A pooled reader URL may put connections on replicas at different points of their replay: the version a
    lookup used (here one no replica has) never becomes the key of a response read elsewhere."""
    service = api.app.state.service  # type: ignore[attr-defined]
    service.catalog._data_version.load_now(lambda: "a version from a replica further ahead")
    body = {"query": "minidump written to disk", "k": 3}
    assert api.post("/v1/search", json=body).status_code == 200
    kept = {key[0] for key in service.results._items}
    assert "a version from a replica further ahead" not in kept
    with service.pool.connection() as conn:
        assert service.catalog.read_data_version(conn) in kept
    service.catalog._data_version.clear()


def test_readiness_and_metrics_show_the_lag_and_a_maximum_turns_the_instance_not_ready(
    replica_settings: Callable[..., ServingSettings], replication: Replication
) -> None:
    with TestClient(create_app(replica_settings(replica_max_lag_seconds=0.5))) as limited:
        ready = limited.get("/readyz")
        assert ready.status_code == 200, ready.text
        body = ready.json()
        assert body["checks"]["replica_lag"] is True
        assert body["replica"] == {"standby": True, "lag_seconds": 0.0, "max_lag_seconds": 0.5}
        assert _metric(limited, "secrag_replica_lag_seconds") == 0.0
        with replication.replay_paused():
            _publish(replication.primary.url(DB), "v4", extra=3)  # the standby receives it and cannot replay it
            _until(lambda: limited.get("/readyz").status_code == 503, "503 while replay is paused")
            body = limited.get("/readyz").json()
            assert body["checks"] == {"database": True, "schema": True, "model": True, "replica_lag": False}
            limit = body["replica"]["max_lag_seconds"]  # not ready because the lag passed it, as reported
            assert body["replica"]["lag_seconds"] > limit
            assert _metric(limited, "secrag_replica_lag_seconds") > limit
            assert limited.post("/v1/search", json={"query": "lsass"}).status_code == 200  # still serves
        replication.wait_for_replay()
        _until(lambda: limited.get("/readyz").status_code == 200, "ready again after replay")


def test_the_query_log_is_refused_on_a_standby(
    replica_settings: Callable[..., ServingSettings], replication: Replication
) -> None:
    standby_log = replica_settings(query_log=True, querylog_database_url=replication.standby.url(DB, "secrag_querylog"))
    with pytest.raises(ConfigError, match="read-only standby"), TestClient(create_app(standby_log)):
        pass
    # By default the query log logs in to DATABASE_URL's server, the primary: the API starts.
    with TestClient(create_app(replica_settings(query_log=True))) as logged:
        assert logged.post("/v1/search", json={"query": "lsass"}).status_code == 200
