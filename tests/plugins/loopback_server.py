"""An ASGI app served by uvicorn in a thread on a loopback port, for tests that need a real HTTP server."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from starlette.types import ASGIApp

START_SECONDS = 60  # bounds a server that never starts, not its speed


@contextmanager
def served(app_for_port: Callable[[int], ASGIApp], **config: Any) -> Iterator[str]:  # noqa: ANN401
    """The app built for its port (an API's allowed hosts name it) under uvicorn with `config`: its base URL,
    once uvicorn has started its lifespan; stopped after."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app_for_port(port), **{"log_level": "warning", **config}))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
