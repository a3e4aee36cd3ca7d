"""refresh_source without Dagster: every attempt recorded (unchanged ones too), whichever phase fails and
whatever fails in it; the source's state, the Dagster check and /v1/sources read the same rows."""

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
from psycopg.rows import dict_row

from pipeline.checks import refresh_verdict
from pipeline.chunking import ChunkConfig
from pipeline.refresh import RefreshFailed, RefreshLimits, refresh_source
from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from pipeline.store import Store
from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
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
        "SELECT status, phase, version, error_class, error_kind, error_detail FROM source_versions "
        "WHERE source = %s ORDER BY id",
        [SOURCE],
    ).fetchall()


def _served(conn: psycopg.Connection) -> tuple[Any, ...]:
    return conn.execute(
        "SELECT s.current_version, st.state, st.error_kind, "
        "(SELECT count(*) FROM documents d WHERE d.source = s.name) "
        "FROM sources s JOIN source_status st USING (name) WHERE s.name = %s",
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
    assert _attempts(conn) == [
        ("published", "publish", first.version, None, None, None),
        ("unchanged", "probe", first.version, None, None, None),
    ]
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
    assert [(r[0], r[1], r[3], r[4]) for r in rows] == [
        ("failed", "probe", "FetchError", "probe_failed"),
        ("failed", "fetch", "FetchError", "fetch_failed"),
        ("failed", "parse", "ParseError", "empty"),
    ]
    assert rows[0][2] is None  # a failed probe knows no version
    assert rows[1][2] == "0123456789abcdef0123456789abcdef01234567"
    assert all(r[5] for r in rows)  # every one keeps its full text for the operators
    assert str(tmp_path) in rows[0][5]  # ... which may name local paths: the reader role never reads it
    current, state, error_kind, documents = _served(conn)
    assert (current, documents) == (published.version, served[3])  # still served
    assert (state, error_kind) == ("failed", "empty")


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
    status, phase, _version, error_class, kind, detail = _attempts(conn)[-1]
    assert (status, phase, error_class, kind) == ("refused", "publish", "PublishRefused", "shrank")
    assert "shrank" in detail
    assert _served(conn)[1:3] == ("refused", "shrank")


def test_a_failed_pinned_backfill_then_an_unchanged_run_tell_one_story(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
) -> None:
    """The unchanged run is an attempt too: the state, the Dagster check and /v1/sources all turn ok."""
    mirror = mirror_factory([SOURCE])
    published = refresh(source_specs[SOURCE], mirror)
    with pytest.raises(RefreshFailed):
        refresh(source_specs[SOURCE], mirror, pin="0123456789abcdef0123456789abcdef01234567")
    assert _served(conn)[1:3] == ("failed", "fetch_failed") and not _check(conn)[0]
    assert _listed(conn)["state"] == "failed"

    again = refresh(source_specs[SOURCE], mirror)
    assert again.status == "unchanged"
    assert [r[0] for r in _attempts(conn)] == ["published", "failed", "unchanged"]
    assert _served(conn)[:3] == (published.version, "ok", None)
    passed, facts = _check(conn)
    assert passed and facts["last_attempt"] == "unchanged"
    listed = _listed(conn)
    assert (listed["state"], listed["error_kind"], listed["attempt_status"]) == ("ok", None, "unchanged")


def test_an_exception_that_is_not_secrags_is_recorded_as_failed_before_it_propagates(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mirror = mirror_factory([SOURCE])
    published = refresh(source_specs[SOURCE], mirror)

    def broken_parser(*_args: object, **_kw: object) -> None:
        raise KeyError("/srv/secrag/private/path")

    monkeypatch.setattr("pipeline.refresh.parse_source", broken_parser)
    spec = dataclasses.replace(source_specs[SOURCE], parser_version=source_specs[SOURCE].parser_version + ".x")
    with pytest.raises(KeyError):  # raised as it was, not wrapped
        refresh(spec, mirror)
    status, phase, version, error_class, kind, detail = _attempts(conn)[-1]
    assert (status, phase, version, error_class, kind) == (
        "failed",
        "parse",
        published.version,
        "KeyError",
        "internal_error",
    )
    assert "/srv/secrag/private/path" in detail
    assert not conn.execute("SELECT 1 FROM source_versions WHERE status = 'running'").fetchone()  # not left running
    assert _served(conn)[:3] == (published.version, "failed", "internal_error")
    assert "/srv/secrag" not in str(_listed(conn))  # the reader's view holds the kind, not the text


def _check(conn: psycopg.Connection) -> tuple[bool, dict[str, Any]]:
    """The Dagster check's verdict (last_refresh_ok), read as the check reads it."""
    q = Queries(sql_dir(), "pipeline")
    attempt = conn.execute(q.last_attempt, {"source": SOURCE}).fetchone()
    unenriched, bearing = conn.execute(q.unenriched_documents, {"source": SOURCE}).fetchone()
    return refresh_verdict(attempt, int(unenriched), int(bearing))


def _listed(conn: psycopg.Connection) -> dict[str, Any]:
    """The source as /v1/sources reads it (the API's statement)."""
    with conn.cursor(row_factory=dict_row) as cur:
        return cur.execute(Queries(sql_dir(), "serving").sources_list, {"names": [SOURCE]}).fetchone()  # type: ignore[return-value]


def test_a_process_killed_during_publish_is_abandoned_and_loses_nothing(
    refresh: Callable[..., Any],
    conn: psycopg.Connection,
    db_url: str,
    mirror_factory: Callable[..., Mirror],
    source_specs: Mapping[str, SourceSpec],
) -> None:
    """kill -9 inside the publish transaction leaves a `running` row and no half-written version; the next
    attempt (of any source) marks the row abandoned."""
    mirror = mirror_factory([SOURCE])
    refresh(source_specs[SOURCE], mirror)
    before = conn.execute("SELECT count(*) FROM chunks WHERE source = %s", [SOURCE]).fetchone()
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from pipeline.store import Store\nfrom secrag.db import database\n"
            "from secrag.files.package_data import sql_dir\n"
            "conn = database.connect(sys.argv[1], autocommit=True)\n"
            "row = Store(sql_dir()).begin_version(conn, 'hijacklibs', 'doomed', 'publish')\n"
            "with conn.transaction():\n"
            "    conn.execute(\"SELECT 1 FROM sources WHERE name = 'hijacklibs' FOR UPDATE\")\n"
            "    conn.execute(\"DELETE FROM chunks WHERE source = 'hijacklibs'\")\n"
            "    print(row, flush=True)\n"
            "    time.sleep(120)\n",
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
    deadline = time.monotonic() + 120  # bounds a hung test only
    while conn.execute(
        "SELECT 1 FROM pg_stat_activity a JOIN source_versions v ON a.pid = v.backend_pid WHERE v.id = %s", [row_id]
    ).fetchone():
        assert time.monotonic() < deadline, "the killed process's session did not end"
        time.sleep(0.1)
    assert conn.execute("SELECT status FROM source_versions WHERE id = %s", [row_id]).fetchone() == ("running",)
    assert _listed(conn)["running_since"] is not None
    refresh(source_specs[SOURCE], mirror)
    status, kind, detail = conn.execute(
        "SELECT status, error_kind, error_detail FROM source_versions WHERE id = %s", [row_id]
    ).fetchone()
    assert (status, kind) == ("abandoned", "abandoned") and "killed or crashed" in detail
    assert not conn.execute("SELECT 1 FROM source_versions WHERE status = 'running'").fetchone()
    assert conn.execute("SELECT count(*) FROM chunks WHERE source = %s", [SOURCE]).fetchone() == before
