"""How a search's statements are sent (serving/search/leg_runs.py): with PostgreSQL's own placeholders,
converted once per statement, because psycopg parses a statement longer than 4 KB on every execution."""

from __future__ import annotations

import re

import pytest

from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.search.leg_runs import native
from serving.search.statements import compose


def test_each_name_gets_one_number_in_the_order_of_first_use() -> None:
    text, names = native("SELECT %(b)s, %(a)s WHERE x = %(b)s AND y LIKE 'T1003.%%'")
    assert text == "SELECT $1, $2 WHERE x = $1 AND y LIKE 'T1003.%'"
    assert names == ("b", "a")


@pytest.mark.parametrize("statement", ["SELECT 5 % 2", "SELECT %s", "SELECT %(a)d"])
def test_a_percent_that_is_no_named_placeholder_is_refused(statement: str) -> None:
    with pytest.raises(ValueError, match="neither"):
        native(statement)


def test_every_search_statement_converts_with_its_placeholders_numbered() -> None:
    statements = compose(Queries(sql_dir(), "serving"), "all-MiniLM-L6-v2", 384)
    for statement in [*statements._searches.values(), statements.result_rows]:
        text, names = native(statement)
        assert len(names) == len(set(names)) and "%(" not in text
        numbers = {int(n) for n in re.findall(r"\$(\d+)", text)}
        assert numbers == set(range(1, len(names) + 1))
        assert set(names) == set(re.findall(r"%\((\w+)\)s", statement))
