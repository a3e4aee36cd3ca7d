"""refresh_source without Dagster: every attempt recorded, whichever phase fails; dead attempts abandoned."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pipeline.chunking import ChunkConfig
from pipeline.refresh import RefreshFailed, RefreshLimits, refresh_source
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from pipeline.store import Store
from secrag import database
from secrag.package_data import sql_dir
from secrag.queries import Queries
from tests.plugins.mirror_changes import add_commit

SOURCE = "hijacklibs"


@pytest.fixture
def conn(db_url: str) -> Iterator[psycopg.Connection]:
    with database.connect(db_url, autocommit=True) as c:
        yield c


@pytest.fixture
def refresh(
    conn: psycopg.Connection, tmp_path: Path, upstream_config: Callable[..., UpstreamConfig]
) -> Callable[..., Any]:
    def run(spec: SourceSpec, mirror: Mirror, **kw: Any) -> Any:  # noqa: ANN401
        limits = RefreshLimits(ChunkConfig(), max_shrink=0.5, max_error_share=0.2, work_dir=tmp_path)
        upstream = OnlineUpstream(upstream_config(mirror, **kw.pop("config", {})))
        return refresh_source(spec, upstream, conn, Store(sql_dir()), Queries(sql_dir(), "pipeline"), limits, **kw)

    return run


def _attempts(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT status, phase, version, error_class, reason FROM source_versions WHERE source = %s ORDER BY id",
        [SOURCE],
    ).fetchall()


def _served(conn: psycopg.Connection) -> tuple[Any, ...]:
    return conn.execute(
        "SELECT s.current_version, s.state, s.last_error, (SELECT count(*) FROM documents d WHERE d.source = s.name) "
        "FROM sources s WHERE s.name = %s",
        [SOURCE],
    ).fetchone()


def test_publish_then_nothing_to_do(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
) -> None:
    mirror = mirror_factory([SOURCE])
    first = refresh(source_specs[SOURCE], mirror)
    assert first.status == "published" and first.records > 0
    again = refresh(source_specs[SOURCE], mirror)
    assert (again.status, again.version, again.records) == ("unchanged", first.version, first.records)
    assert _attempts(conn) == [("published", "publish", first.version, None, None)]
    assert _served(conn)[:3] == (first.version, "ok", None)


def test_each_failing_phase_is_recorded_and_the_served_version_stays(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
    tmp_path: Path,
) -> None:
    spec = source_specs[SOURCE]
    mirror = mirror_factory([SOURCE])
    published = refresh(spec, mirror)
    served = _served(conn)

    gone = {"repo_overrides": {SOURCE: (tmp_path / "gone.git").as_uri()}}
    with pytest.raises(RefreshFailed) as probe:
        refresh(spec, mirror, config=gone)
    with pytest.raises(RefreshFailed) as fetch:
        refresh(spec, mirror, pin="0123456789abcdef0123456789abcdef01234567")
    with pytest.raises(RefreshFailed) as parse:
        refresh(dataclasses.replace(spec, parser_version=spec.parser_version + ".x", paths=("nowhere/*.yml",)), mirror)

    assert (probe.value.phase, fetch.value.phase, parse.value.phase) == ("probe", "fetch", "parse")
    assert parse.value.empty and not fetch.value.empty
    rows = _attempts(conn)[1:]
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("failed", "probe", "FetchError"),
        ("failed", "fetch", "FetchError"),
        ("failed", "parse", "ParseError"),
    ]
    assert rows[0][2] is None  # a failed probe knows no version
    assert rows[1][2] == "0123456789abcdef0123456789abcdef01234567"
    assert all(r[4] for r in rows)  # every one says why
    current, state, last_error, documents = _served(conn)
    assert (current, documents) == (published.version, served[3])  # still served
    assert state == "failed" and "no files match" in last_error


def test_a_shrunk_version_is_refused_in_the_publish_phase(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
) -> None:
    mirror = mirror_factory([SOURCE], fresh=True)
    refresh(source_specs[SOURCE], mirror)
    listing = subprocess.run(
        ["git", "--git-dir", str(mirror.git_dir(SOURCE)), "ls-tree", "-r", "--name-only", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    yml = [p for p in listing if p.endswith(".yml")]
    assert len(yml) > 10
    add_commit(mirror, SOURCE, {rel: None for rel in yml[len(yml) // 4 :]})
    refused = refresh(source_specs[SOURCE], mirror)
    assert refused.status == "refused"
    status, phase, _version, error_class, reason = _attempts(conn)[-1]
    assert (status, phase, error_class) == ("refused", "publish", "PublishRefused") and "shrank" in reason


def test_a_killed_attempt_is_marked_abandoned_by_the_next_one(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    db_url: str,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
) -> None:
    """kill -9 during an attempt leaves a `running` row; the next attempt (of any source) closes it."""
    mirror = mirror_factory([SOURCE])
    refresh(source_specs[SOURCE], mirror)
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pipeline.store import Store\nfrom secrag import database\nfrom secrag.package_data import sql_dir\n"
            "conn = database.connect(sys.argv[1], autocommit=True)\n"
            "print(Store(sql_dir()).begin_version(conn, 'hijacklibs', 'doomed'), flush=True)\n"
            "time.sleep(120)\n",
            db_url,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        row_id = int(child.stdout.readline())  # type: ignore[union-attr]
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    deadline = time.monotonic() + 10
    while conn.execute(
        "SELECT 1 FROM pg_stat_activity a JOIN source_versions v ON a.pid = v.backend_pid WHERE v.id = %s", [row_id]
    ).fetchone():
        assert time.monotonic() < deadline, "the killed process's session did not end"
        time.sleep(0.1)
    assert conn.execute("SELECT status FROM source_versions WHERE id = %s", [row_id]).fetchone() == ("running",)
    refresh(source_specs[SOURCE], mirror)
    status, reason = conn.execute("SELECT status, reason FROM source_versions WHERE id = %s", [row_id]).fetchone()
    assert status == "abandoned" and "killed or crashed" in reason
    assert not conn.execute("SELECT 1 FROM source_versions WHERE status = 'running'").fetchone()
