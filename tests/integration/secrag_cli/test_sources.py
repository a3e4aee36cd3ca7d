"""`secrag sources list|check` against local mirrors, with and without a database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from pipeline.sources.mirror import Mirror
from secrag.settings import get_settings
from secrag_cli.sources import sources

SMALL = ["hijacklibs", "cisa_kev", "stratus_red_team"]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[pytest.MonkeyPatch]:
    for name in ("DATABASE_URL", "SECRAG_DATABASE_URL", "GITHUB_TOKEN", "SECRAG_GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SECRAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)  # no stray .env
    get_settings.cache_clear()
    yield monkeypatch
    get_settings.cache_clear()


@pytest.fixture
def small_snapshot(snapshot_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "snapshot"
    root.mkdir()
    for name in [*SMALL, "MANIFEST.json"]:  # the manifest's commit dates make the same commits
        (root / name).symlink_to(snapshot_dir / name)
    return root


def test_list_shows_every_registered_source(env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(sources, ["list"])
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert header.split() == ["name", "tracking", "upstream", "parser", "category", "enabled"]
    by_name = {row.split()[0]: row.split() for row in rows}
    assert by_name["cisa_kev"][1:3] == ["feed", "www.cisa.gov"]
    assert by_name["sigma"][1:3] == ["commit", "SigmaHQ/sigma"]


def test_check_without_a_database_prints_versions(
    env: pytest.MonkeyPatch, small_snapshot: Path, mirror_factory: Callable[..., Mirror]
) -> None:
    env.setenv("SECRAG_UPSTREAM_MIRROR", str(small_snapshot))
    result = CliRunner().invoke(sources, ["check", *SMALL])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line.split()[1:] for line in result.output.splitlines()}
    head = mirror_factory(SMALL).head("hijacklibs")  # same snapshot, same deterministic commit
    assert lines["hijacklibs"] == [head]
    assert lines["stratus_red_team"][0].startswith("mirror-")
    assert lines["cisa_kev"] == ["2026.08.07"]


def test_check_compares_with_the_stored_versions(
    env: pytest.MonkeyPatch, small_snapshot: Path, mirror_factory: Callable[..., Mirror], db_url: str
) -> None:
    head = mirror_factory(SMALL).head("hijacklibs")
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sources (name, kind, current_version) VALUES "
            "('hijacklibs', 'online', %s), ('cisa_kev', 'online', '2000.01.01')",
            [head],
        )
    env.setenv("SECRAG_UPSTREAM_MIRROR", str(small_snapshot))
    env.setenv("DATABASE_URL", db_url)
    result = CliRunner().invoke(sources, ["check", *SMALL])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert lines["hijacklibs"].endswith("unchanged")
    assert lines["cisa_kev"].endswith("changed (was 2000.01.01)")
    assert lines["stratus_red_team"].endswith("new")


def test_failed_probe_is_reported_and_exits_1(env: pytest.MonkeyPatch) -> None:
    env.setenv("SECRAG_GITHUB_API_BASE", "https://127.0.0.1:9/api")  # refused by the URL policy: no request
    env.setenv("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none")  # unreachable: just print
    result = CliRunner().invoke(sources, ["check", "stratus_red_team"])
    assert result.exit_code == 1
    assert "stratus_red_team     FAILED  " in result.output
    assert "IP-literal hosts are not allowed" in result.output


def test_unknown_source_name(env: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(sources, ["check", "nope"])
    assert result.exit_code == 1
    assert "unknown source(s): nope" in result.output


def test_list_shows_each_sources_last_attempt_when_the_store_is_up(env: pytest.MonkeyPatch, db_url: str) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("INSERT INTO sources (name, kind) VALUES ('hijacklibs', 'online')")
        conn.execute(
            "INSERT INTO source_versions (source, version, status, phase, error_kind, error_detail, finished_at) "
            "VALUES ('hijacklibs', NULL, 'failed', 'probe', 'probe_failed', 'HTTP 503', now())"
        )
    env.setenv("DATABASE_URL", db_url)
    result = CliRunner().invoke(sources, ["list"])
    assert result.exit_code == 0, result.output
    lines = {line.split()[0]: line for line in result.output.splitlines()}
    assert "last attempt" in lines["name"]
    assert "failed (probe)" in lines["hijacklibs"] and lines["hijacklibs"].endswith("HTTP 503")
    assert lines["sigma"].endswith("never")
