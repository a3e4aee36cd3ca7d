"""The API as a bench talks to it: in process on a store (caches and quotas off), or over one keep-alive connection."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit


class Client(Protocol):
    """An HTTP client of the API (httpx.Client, or FastAPI's TestClient for an API in process)."""

    def post(self, url: str, *, json: Any) -> Any: ...  # noqa: ANN401


def api_settings(url: str, search_config: Path | None = None) -> Any:  # noqa: ANN401 - a ServingSettings
    """The API's settings for an in-process bench on the store at `url`: caches, quotas and MCP off."""
    from serving.settings import ServingSettings

    off = dict.fromkeys(("query_cache_size", "result_cache_size", "anonymous_rate_per_minute"), 0)
    config = {"search_config": search_config} if search_config else {}
    return ServingSettings(  # type: ignore[call-arg]
        _env_file=None, database_url=url, mcp_enabled=False, anonymous_heavy_concurrency=0, **off, **config
    )


@contextmanager
def in_process(url: str, search_config: Path | None = None, **update: Any) -> Iterator[Any]:  # noqa: ANN401
    """A TestClient of the API on the store at `url` (api_settings, `update` laid over them), started and stopped
    around the block."""
    from fastapi.testclient import TestClient

    from serving.api.app import create_app

    with TestClient(create_app(api_settings(url, search_config).model_copy(update=update))) as api:
        yield api


class Poster:
    """POSTs JSON over one keep-alive HTTP/1.1 connection (reopened after an error); answers the status.
    http.client, not httpx: the clients share the cores with the server, and httpx costs about 1.5 ms of
    CPU a request that the server then lacks."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.prefix = parts.hostname or "127.0.0.1", parts.port or 80, parts.path.rstrip("/")
        self.timeout = timeout
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(self, path: str, body: dict[str, Any]) -> int:
        try:
            headers = {"content-type": "application/json"}
            self.conn.request("POST", self.prefix + path, body=json.dumps(body).encode(), headers=headers)
            response = self.conn.getresponse()
            response.read()
            return response.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            return 0

    def close(self) -> None:
        self.conn.close()
