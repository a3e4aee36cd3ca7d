"""Named SQL blocks loaded from `sql/queries/*.sql` (`-- name: <block>` headers), and the one-row read."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import psycopg

from secrag.errors import ConfigError, DatabaseError

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def parse_blocks(text: str) -> dict[str, str]:
    """Split a queries file into its named blocks."""
    blocks: dict[str, str] = {}
    matches = list(_HEADER.finditer(text))
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        body = text[match.end() : end].strip()
        if match.group(1) in blocks:
            raise ConfigError(f"query block {match.group(1)!r} is defined twice")
        blocks[match.group(1)] = body
    return blocks


@cache
def load(sql_dir: Path, group: str) -> dict[str, str]:
    """All named blocks of `<sql_dir>/queries/<group>.sql`."""
    path = sql_dir / "queries" / f"{group}.sql"
    if not path.exists():
        raise ConfigError(f"missing SQL file {path}")
    return parse_blocks(path.read_text(encoding="utf-8"))


class Queries:
    """Attribute access to one group's named blocks: `Queries(dir, "store").upsert_source`."""

    def __init__(self, sql_dir: Path, group: str) -> None:
        self._blocks = load(sql_dir, group)
        self._group = group

    def __getattr__(self, name: str) -> str:
        try:
            return self._blocks[name]
        except KeyError:
            raise AttributeError(f"no query {name!r} in {self._group}.sql") from None


def one_row(cursor: psycopg.Cursor[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The row of a query that always returns exactly one (an aggregate, a SELECT without FROM)."""
    row = cursor.fetchone()
    if row is None:
        raise DatabaseError("a query that always returns one row returned none")
    return row
