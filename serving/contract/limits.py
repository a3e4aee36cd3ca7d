"""Request-body and response-size limits."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

T = TypeVar("T", bound=BaseModel)
_ENVELOPE_BYTES = 2048  # room for the non-list fields of a response


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
        body = json.dumps({"detail": f"request body larger than {self.max_bytes} bytes", "kind": "too_large"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
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
