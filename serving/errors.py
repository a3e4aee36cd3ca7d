"""Errors the API turns into HTTP answers, and the handlers that keep internals out of responses."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from psycopg_pool import PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from secrag.errors import SecragError

from .auth import UnknownApiKey

log = logging.getLogger(__name__)


class ApiError(SecragError):
    """An error with an HTTP status and a message safe to show."""

    status = 400

    def __init__(self, message: str, *, detail: Any = None) -> None:  # noqa: ANN401
        super().__init__(message)
        self.detail = detail if detail is not None else message


class InvalidField(ApiError):
    """A request field that passed the schema but not the store (e.g. an unknown source name)."""

    status = 422

    def __init__(self, loc: list[str | int], message: str, kind: str = "value_error") -> None:
        super().__init__(message, detail=[{"loc": loc, "msg": message, "type": kind}])


class NotFound(ApiError):
    status = 404


class NotImplementedFeature(ApiError):
    status = 501


class UpstreamFailed(ApiError):
    """The upstream (or its mirror) did not give the record."""

    status = 502


class UpstreamTimeout(ApiError):
    status = 504


class UpstreamTooLarge(ApiError):
    status = 413


def _clean_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Field errors without the echoed input or internal context (they can be large or sensitive)."""
    return [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", ""))[:300], "type": e.get("type", "")}
        for e in errors[:50]
    ]


async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": _clean_errors(list(exc.errors()))})


async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse(status_code=exc.status, content={"detail": exc.detail})


async def _unknown_key(_: Request, __: UnknownApiKey) -> JSONResponse:
    return JSONResponse(status_code=401, content={"detail": "unknown API key"}, headers={"WWW-Authenticate": "Bearer"})


async def _timeout(_: Request, exc: psycopg.errors.QueryCanceled) -> JSONResponse:
    log.warning("statement timeout", extra={"error": type(exc).__name__})
    return JSONResponse(status_code=504, content={"detail": "the query took too long and was cancelled"})


async def _unavailable(_: Request, exc: Exception) -> JSONResponse:
    log.warning("database unavailable", extra={"error": type(exc).__name__})
    return JSONResponse(
        status_code=503, content={"detail": "database unavailable, try again shortly"}, headers={"Retry-After": "2"}
    )


async def _database_error(_: Request, exc: psycopg.Error) -> JSONResponse:
    log.error("database error", extra={"error": type(exc).__name__, "sqlstate": exc.sqlstate})
    return JSONResponse(status_code=500, content={"detail": "internal error"})


async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
    detail = exc.detail if isinstance(exc.detail, str) else "error"
    return JSONResponse(status_code=exc.status_code, content={"detail": detail}, headers=exc.headers)


async def _internal(_: Request, exc: Exception) -> JSONResponse:
    log.error("unhandled error", exc_info=exc)
    return JSONResponse(status_code=500, content={"detail": "internal error"})


def install(app: FastAPI) -> None:
    """Register every handler; no response ever carries a traceback, SQL or a file path."""
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(UnknownApiKey, _unknown_key)  # type: ignore[arg-type]
    app.add_exception_handler(psycopg.errors.QueryCanceled, _timeout)  # type: ignore[arg-type]
    app.add_exception_handler(PoolTimeout, _unavailable)
    app.add_exception_handler(psycopg.OperationalError, _unavailable)
    app.add_exception_handler(psycopg.InterfaceError, _unavailable)
    app.add_exception_handler(psycopg.Error, _database_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _internal)
