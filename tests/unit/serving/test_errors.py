"""One mapping from failures to what callers see, shared by REST and MCP."""

from __future__ import annotations

import psycopg
import pytest
from psycopg_pool import PoolTimeout
from pydantic import BaseModel, ValidationError

from serving.access.keys import UnknownApiKey
from serving.contract.errors import InvalidField, NotFound, UpstreamTooLarge, name_statement, public_error, statement_of


class _Model(BaseModel):
    k: int


def _validation_error() -> ValidationError:
    try:
        _Model.model_validate({"k": "many"})
    except ValidationError as exc:
        return exc
    raise AssertionError("expected a validation error")


@pytest.mark.parametrize(
    ("exc", "status", "message", "kind"),
    [
        (NotFound("no document 'x'"), 404, "no document 'x'", "not_found"),
        (UpstreamTooLarge("over the cap"), 413, "over the cap", "upstream_too_large"),
        (InvalidField(["body", "sources"], "unknown source"), 422, "body.sources: unknown source", "invalid_field"),
        (UnknownApiKey(), 401, "unknown API key", "unknown_api_key"),
        (
            psycopg.errors.QueryCanceled("canceling statement"),
            504,
            "the query took too long and was cancelled",
            "statement_timeout",
        ),
        (PoolTimeout("no connection"), 503, "database unavailable, try again shortly", "database_unavailable"),
        (
            psycopg.OperationalError("server closed the connection at /var/run/x"),
            503,
            "database unavailable",
            "database_unavailable",
        ),
        (psycopg.errors.SyntaxError("syntax error at SELECT"), 500, "internal error", "database_error"),
        (RuntimeError("/etc/secret path"), 500, "internal error", "internal"),
    ],
)
def test_each_failure_kind_has_one_public_form(exc: Exception, status: int, message: str, kind: str) -> None:
    error = public_error(exc)
    assert (error.status, error.kind) == (status, kind)
    assert error.message().startswith(message)
    assert "SELECT" not in error.message() and "/etc" not in error.message() and "/var" not in error.message()


def test_validation_errors_drop_the_input_and_name_the_field() -> None:
    error = public_error(_validation_error())
    assert error.status == 422
    assert error.detail == [{"loc": ["k"], "msg": error.detail[0]["msg"], "type": "int_parsing"}]
    assert "many" not in str(error.detail) and error.message().startswith("k: ")


def test_unavailable_asks_to_retry() -> None:
    assert public_error(PoolTimeout("x")).headers == {"Retry-After": "2"}


def test_a_database_error_is_logged_with_its_kind_and_sqlstate(caplog: pytest.LogCaptureFixture) -> None:
    """What the plain-text log line ends in (secrag/logs.py): the cause, without the caller's text."""
    with caplog.at_level("ERROR", logger="serving.contract.errors"):
        assert public_error(psycopg.errors.InternalError_("tsquery stack too small")).kind == "database_error"
    record = caplog.records[-1]
    assert (record.getMessage(), record.kind, record.sqlstate, record.error) == (  # type: ignore[attr-defined]
        "database error",
        "database_error",
        "XX000",
        "InternalError_",
    )


def test_a_failed_statement_is_logged_by_its_name(caplog: pytest.LogCaptureFixture) -> None:
    exc = psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
    name_statement(exc, "search:fts+vec")
    with caplog.at_level("WARNING", logger="serving.contract.errors"):
        assert public_error(exc).kind == "statement_timeout"
    assert caplog.records[-1].statement == "search:fts+vec"  # type: ignore[attr-defined]
    assert statement_of(psycopg.errors.InternalError_("x")) == {}
