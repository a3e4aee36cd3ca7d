"""The webhook receiver (`secrag hooks`) served by uvicorn on a loopback port over a test database."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import uvicorn

from secrag.settings import Settings
from serving.hooks.app import create_app


@contextmanager
def serve_hooks(db_url: str, secrets: Mapping[str, str], max_body_bytes: int = 1024 * 1024) -> Iterator[str]:
    """The receiver with these sources' secrets: its base URL (http://127.0.0.1:port)."""
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=db_url,
        hooks_enabled=True,
        hook_secrets=dict(secrets),
        hook_max_body_bytes=max_body_bytes,
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
