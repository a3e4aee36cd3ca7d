"""The search statements composed from sql/queries/serving.sql: one UNION ALL statement per set of legs."""

from __future__ import annotations

import pytest

from secrag.package_data import sql_dir
from secrag.queries import Queries
from serving.search.statements import LEGS, Statements, compose


@pytest.fixture(scope="module")
def statements() -> Statements:
    return compose(Queries(sql_dir(), "serving"), "all-MiniLM-L6-v2", 384)


def test_every_leg_is_filled_with_the_index_expression_and_model(statements: Statements) -> None:
    for text in (statements.vec, statements.fts_vec):
        assert "e.vector::vector(384) <=> %(qvec)s::vector" in text
        assert "'all-MiniLM-L6-v2'" in text
    assert "cv.vector::vector(384) <=> %(qvec)s::vector" in statements.vec_exact  # over chunk_vectors
    assert "cv.model_id = 'all-MiniLM-L6-v2'" in statements.vec_exact
    for text in (
        statements.vec,
        statements.vec_exact,
        statements.fts,
        statements.fts_vec,
        statements.fuzzy,
        statements.exact,
    ):
        assert "{" not in text.replace("'{", "")  # no placeholder left unfilled
        assert "d.tenant IS NULL" in text  # every leg applies the ACL


def test_every_read_of_documents_applies_the_one_access_check(statements: Statements) -> None:
    check = Queries(sql_dir(), "serving").visible
    for text in (
        statements.vec,
        statements.vec_exact,
        statements.fts,
        statements.fts_vec,
        statements.fuzzy,
        statements.exact,
        statements.result_rows,
        statements.documents_by_id,
        statements.chunks_by_id,
        statements.upstream_records,
        statements.known_sources,
    ):
        assert check in text and "{visible}" not in text


def test_a_search_is_one_union_of_the_legs_it_needs(statements: Statements) -> None:
    both = statements.search(["fts", "vec"])
    assert both == f"({statements.vec})\nUNION ALL\n({statements.fts})"  # legs in a fixed order
    assert statements.search(["vec"]) == f"({statements.vec})"
    assert (
        statements.search(["vec", "exact"], exact_vectors=True)
        == f"({statements.vec_exact})\nUNION ALL\n({statements.exact})"
    )
    assert statements.search(["fts"], exact_vectors=True) == f"({statements.fts})"  # no vector leg to switch
    assert statements.search(LEGS).count("\nUNION ALL\n") == len(LEGS) - 1


def test_every_leg_tags_its_rows(statements: Statements) -> None:
    """Rows of the one statement are told apart by `leg` (the database checks the legs' columns match)."""
    assert all(
        f"SELECT '{leg}' AS leg, c.chunk_id" in getattr(statements, leg) for leg in ("vec", "fts", "fuzzy", "exact")
    )
    assert "SELECT 'vec' AS leg, c.chunk_id" in statements.vec_exact
    assert "SELECT 'fts_vec' AS leg, f.chunk_id" in statements.fts_vec


def test_a_search_without_legs_is_refused(statements: Statements) -> None:
    with pytest.raises(ValueError, match="at least one leg"):
        statements.search([])
