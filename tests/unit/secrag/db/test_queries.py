"""Named SQL blocks."""

from __future__ import annotations

import pytest

from secrag.db.queries import Queries, parse_blocks
from secrag.errors import ConfigError
from secrag.files.package_data import sql_dir


def test_blocks_are_split_by_name() -> None:
    blocks = parse_blocks("-- name: a\nSELECT 1\n\n-- name: b\nSELECT %(x)s\n")
    assert blocks == {"a": "SELECT 1", "b": "SELECT %(x)s"}


def test_duplicate_names_are_refused() -> None:
    with pytest.raises(ConfigError, match="twice"):
        parse_blocks("-- name: a\nSELECT 1\n-- name: a\nSELECT 2\n")


def test_every_sql_file_parses_and_binds_values_by_name() -> None:
    for path in (sql_dir() / "queries").glob("*.sql"):
        q = Queries(sql_dir(), path.stem)
        assert q._blocks, path
        for name, text in q._blocks.items():
            # values are bound as %(name)s; `{x}` placeholders are only filled through psycopg.sql
            assert "%s" not in text, f"{path}:{name} uses positional parameters"
