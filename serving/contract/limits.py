"""Request-body and response-size limits: the request body's cap, the answer's bound (SECRAG_MAX_ANSWER_BYTES) as
the REST API's last line of defence, and the search results' trimming."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from serving.contract.errors import ERROR_KEY, AnswerTooLarge

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
_ENVELOPE_BYTES = 2048  # room for the non-list fields of a response
NARROW = "ask for less (fewer ids or entries, a smaller k, limit or top)"  # an answer over the bound, in general


class _TooLarge(HTTPException):
    """Raised from `receive`; FastAPI re-raises HTTPExceptions from body parsing unchanged."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(status_code=413, detail=f"request body larger than {max_bytes} bytes")


class BodySizeLimit:
    """413 for request bodies over `max_bytes`, by Content-Length or by counting a streamed body."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    too_big = int(value) > self.max_bytes
                except ValueError:
                    too_big = False
                if too_big:
                    await self._reject(send)
                    return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._reject(send)

    async def _reject(self, send: Send) -> None:
        await _send_error(send, 413, f"request body larger than {self.max_bytes} bytes", "too_large")


def compact_json(value: Any) -> str:  # noqa: ANN401 - any JSON value
    """The value as compact JSON: the text an MCP client reads (a budget counts its characters), and an answer
    as SECRAG_MAX_ANSWER_BYTES counts it (its UTF-8 bytes)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def answer_bytes(value: Any) -> int:  # noqa: ANN401 - any JSON value
    """The value's size as compact UTF-8 JSON: what SECRAG_MAX_ANSWER_BYTES counts of an answer."""
    return len(compact_json(value).encode())


def answer_too_large(size: int, max_bytes: int, narrow: str) -> AnswerTooLarge:
    """The 413 of an answer over the bound: its size, the bound and the setting, and how to ask for less."""
    return AnswerTooLarge(
        f"the answer would be {size:,} bytes, over this deployment's bound of {max_bytes:,} "
        f"(SECRAG_MAX_ANSWER_BYTES): {narrow}"
    )


class AnswerSizeLimit:
    """The last line of defence of SECRAG_MAX_ANSWER_BYTES over REST: a /v1 answer whose Content-Length is over the
    bound is replaced by the 413 before its first byte is sent. Operations whose answer size follows from the
    request refuse before building it (serving/access/request_limits.py, RequestLimits.check_answer)."""

    def __init__(self, app: ASGIApp, max_bytes: int, prefix: str) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        refused = False

        async def bounded_send(message: Message) -> None:
            nonlocal refused
            if refused:
                return
            if message["type"] == "http.response.start":
                size = _content_length(message)
                if size is not None and size > self.max_bytes:
                    refused = True
                    scope.setdefault("state", {})[ERROR_KEY] = AnswerTooLarge.kind
                    # past every estimate: the operator learns which operation built it
                    log.warning(
                        "answer over SECRAG_MAX_ANSWER_BYTES",
                        extra={"kind": AnswerTooLarge.kind, "path": scope.get("path"), "bytes": size},
                    )
                    error = answer_too_large(size, self.max_bytes, NARROW)
                    await _send_error(send, error.status, error.detail, error.kind)
                    return
            await send(message)

        await self.app(scope, receive, bounded_send)


def _content_length(start: Message) -> int | None:
    for name, value in start.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _send_error(send: Send, status: int, detail: str, kind: str) -> None:
    """An error answer in the API's error body, from a middleware (outside the exception handlers)."""
    body = json.dumps({"detail": detail, "kind": kind}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def cap(items: Sequence[T], max_bytes: int) -> tuple[list[T], bool]:
    """The longest prefix of items whose JSON stays under max_bytes, and whether anything was dropped."""
    budget = max_bytes - _ENVELOPE_BYTES
    kept: list[T] = []
    for item in items:
        size = len(item.model_dump_json(by_alias=True)) + 1
        if size > budget:
            return kept, True
        budget -= size
        kept.append(item)
    return kept, False
