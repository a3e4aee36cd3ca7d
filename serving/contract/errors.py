"""Errors the API turns into HTTP answers, and the handlers that keep internals out of responses."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from secrag.errors import SecragError

log = logging.getLogger(__name__)

ERROR_KEY = "secrag_error"  # where an error response's kind waits for /metrics (serving/observability/metrics.py)


class UnknownApiKey(Exception):
    """The request presented a key that is not configured."""


class ApiError(SecragError):
    """An error with an HTTP status and a message safe to show."""

    status = 400
    kind = "bad_request"  # a stable word callers can branch on (ERROR_KINDS)
    headers: Mapping[str, str] = {}

    def __init__(self, message: str, *, detail: Any = None) -> None:  # noqa: ANN401
        super().__init__(message)
        self.detail = detail if detail is not None else message


class InvalidField(ApiError):
    """A request field that passed the schema but not the store (e.g. an unknown source name)."""

    status = 422
    kind = "invalid_field"

    def __init__(self, loc: list[str | int], message: str, kind: str = "value_error") -> None:
        super().__init__(message, detail=[{"loc": loc, "msg": message, "type": kind}])


class KeyRequired(ApiError):
    """An anonymous request where every caller must present an API key."""

    status = 401
    kind = "key_required"
    headers = {"WWW-Authenticate": "Bearer"}


class TooManyRequests(ApiError):
    """A caller over its request rate or its concurrent-search slots."""

    status = 429
    kind = "too_many_requests"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(max(1, retry_after))}


class NotFound(ApiError):
    """No such record, path, actor, tactic or domain, or one the caller may not see."""

    status = 404
    kind = "not_found"


class NotImplementedFeature(ApiError):
    """A request the store cannot answer for this record (e.g. a live upstream read of a source not on GitHub)."""

    status = 501
    kind = "not_implemented"


class UpstreamFailed(ApiError):
    """The upstream (or its mirror) did not give the record."""

    status = 502
    kind = "upstream_failed"


class UpstreamTimeout(ApiError):
    """A live upstream read past SECRAG_UPSTREAM_TIMEOUT."""

    status = 504
    kind = "upstream_timeout"


class UpstreamTooLarge(ApiError):
    """An upstream record over SECRAG_UPSTREAM_MAX_BYTES."""

    status = 413
    kind = "upstream_too_large"


class AnswerTooLarge(ApiError):
    """An answer larger than the deployment's SECRAG_MAX_ANSWER_BYTES: refused, with how to narrow the request."""

    status = 413
    kind = "answer_too_large"


# Starlette's own answers (an unknown path, a wrong method) by status.
_HTTP_KINDS = {404: "not_found", 405: "method_not_allowed", 413: "too_large", 415: "unsupported_media_type"}


def _clean_errors(errors: list[Any]) -> list[dict[str, Any]]:
    """Field errors without the echoed input or internal context (they can be large or sensitive)."""
    return [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))[:300], "type": e.get("type", "")}
        for e in errors[:50]
    ]


@dataclass(frozen=True)
class PublicError:
    """What a caller may see of a failure: a status, a safe detail and headers (REST and MCP alike)."""

    status: int
    detail: Any
    headers: Mapping[str, str] = field(default_factory=dict)
    kind: str = "internal"  # a stable word of ERROR_KINDS: in every error body and the /metrics label

    def message(self) -> str:
        """The detail as one line (field errors as `loc: msg; ...`)."""
        if isinstance(self.detail, list):
            return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in self.detail[:5])
        return str(self.detail)


_UNAVAILABLE = PublicError(
    503, "database unavailable, try again shortly", {"Retry-After": "2"}, kind="database_unavailable"
)
_INTERNAL = PublicError(500, "internal error")


_STATEMENT = "secrag_statement"  # the attribute a failed statement's name is kept in


def name_statement(exc: BaseException, name: str) -> None:
    """Keep the name of the statement that failed on its exception, for the error log."""
    setattr(exc, _STATEMENT, name)


def statement_of(exc: BaseException) -> dict[str, str]:
    """The failed statement's name as a log field (none when it was not named)."""
    name = getattr(exc, _STATEMENT, None)
    return {"statement": name} if isinstance(name, str) else {}


def public_error(exc: BaseException) -> PublicError:
    """The one mapping from an exception to its public form; no traceback, SQL or file path gets out.

    One branch per failure kind the API knows; everything else is an internal error, logged in full.
    """
    if isinstance(exc, ApiError):
        return PublicError(exc.status, exc.detail, dict(exc.headers), kind=exc.kind)
    if isinstance(exc, RequestValidationError | ValidationError):
        return PublicError(422, _clean_errors(list(exc.errors())), kind="validation")
    if isinstance(exc, UnknownApiKey):
        return PublicError(401, "unknown API key", {"WWW-Authenticate": "Bearer"}, kind="unknown_api_key")
    if isinstance(exc, psycopg.errors.QueryCanceled):
        log.warning(
            "statement timeout",
            extra={"kind": "statement_timeout", "error": type(exc).__name__, **statement_of(exc)},
        )
        return PublicError(504, "the query took too long and was cancelled", kind="statement_timeout")
    if isinstance(exc, PoolTimeout | psycopg.OperationalError | psycopg.InterfaceError):
        log.warning(
            "database unavailable",
            extra={"kind": "database_unavailable", "error": type(exc).__name__, **statement_of(exc)},
        )
        return _UNAVAILABLE
    if isinstance(exc, psycopg.Error):
        log.error(
            "database error",
            extra={
                "kind": "database_error",
                "sqlstate": exc.sqlstate,
                "error": type(exc).__name__,
                **statement_of(exc),
            },
        )
        return PublicError(500, _INTERNAL.detail, kind="database_error")
    if isinstance(exc, StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "error"
        kind = _HTTP_KINDS.get(exc.status_code, "bad_request" if exc.status_code < 500 else "internal")
        return PublicError(exc.status_code, detail, dict(exc.headers or {}), kind=kind)
    log.error("unhandled error", exc_info=exc, extra={"kind": "internal", "error": type(exc).__name__})
    return _INTERNAL


async def _respond(request: Request, exc: Exception) -> JSONResponse:
    error = public_error(exc)
    request.scope.setdefault("state", {})[ERROR_KEY] = error.kind
    return JSONResponse(
        status_code=error.status, content={"detail": error.detail, "kind": error.kind}, headers=dict(error.headers)
    )


_HANDLED: tuple[type[Exception], ...] = (
    RequestValidationError,
    ApiError,
    UnknownApiKey,
    PoolTimeout,
    psycopg.Error,
    StarletteHTTPException,
    Exception,
)


def install(app: FastAPI) -> None:
    """Answer every failure through public_error; no response ever carries a traceback, SQL or a file path."""
    for kind in _HANDLED:
        app.add_exception_handler(kind, _respond)
