"""The webhook receiver (`secrag hooks`) served by uvicorn on a loopback port over a test database."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from secrag.settings import Settings
from serving.hooks.app import create_app
from tests.plugins.loopback_server import served


@contextmanager
def serve_hooks(
    db_url: str, secrets: Mapping[str, str], max_body_bytes: int = 1024 * 1024, **more: int
) -> Iterator[str]:
    """The receiver with these hooks' secrets (and `more` hook settings): its base URL (http://127.0.0.1:port)."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=db_url,
        hooks_enabled=True,
        hook_secrets=dict(secrets),
        hook_max_body_bytes=max_body_bytes,
        **more,
    )
    with served(lambda _port: create_app(settings), lifespan="on") as url:
        yield url
