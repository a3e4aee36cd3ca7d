"""`secrag status`: the store's totals and one row per source, in columns."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

from secrag.settings import get_settings
from secrag_cli.status import status


def test_a_long_source_name_keeps_the_columns(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO sources (name, kind, current_version, record_count) VALUES "
            "('mitre_attack_mobile_procedures', 'online', 'v1', 1404), ('sigma', 'online', 'v2', 3780)"
        )
    monkeypatch.setenv("DATABASE_URL", db_url)
    get_settings.cache_clear()
    try:
        result = CliRunner().invoke(status)
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    header, *rows = result.output.split("\n\n", 1)[1].splitlines()
    assert [r.split()[0] for r in rows] == ["mitre_attack_mobile_procedures", "sigma"]
    state = header.index("state")
    assert [row[:state].split() for row in rows] == [["mitre_attack_mobile_procedures"], ["sigma"]]  # names whole
    assert {row[state:].split()[1] for row in rows} == {"1404", "3780"}
