"""Offline upstreams for tests: the real snapshot, git mirrors built from it, a loopback HTTP server."""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult

import pytest

from pipeline.sources.mirror import Mirror, build_mirror
from pipeline.sources.registry import SourceSpec, default_registry
from pipeline.sources.upstream import UpstreamConfig
from secrag.net.download_limits import DownloadLimits
from secrag.net.url_policy import UrlPolicy, parse_url

SNAPSHOT = Path(__file__).resolve().parents[2].parent / "shared" / "upstream"

Body = bytes | Callable[[], bytes]
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True)
class LoopbackPolicy(UrlPolicy):
    """The production URL policy plus http(s) to this machine's loopback (the tests' servers).

    Production code has no loopback switch: tests hand this policy to the code under test.
    """

    def check(self, url: str) -> SplitResult:
        parts, host = parse_url(url)
        plain = parts.username is None and parts.password is None
        if parts.scheme in ("http", "https") and host in LOOPBACK_HOSTS and plain:
            return parts
        return super().check(url)

    def git_protocols(self) -> tuple[str, ...]:
        return (*super().git_protocols(), "http")

    def is_private_channel(self, parts: SplitResult) -> bool:
        return super().is_private_channel(parts) or (parts.hostname or "") in LOOPBACK_HOSTS

    def address_allowed(self, address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
        return address.is_loopback or super().address_allowed(address)


FAST_RETRIES = DownloadLimits(retry_base=0.05)


@dataclass(frozen=True)
class Reply:
    """One programmed response; `size` streams that many zero bytes instead of `body`."""

    status: int = 200
    body: Body = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (a hang, when past the client timeout)
    size: int | None = None
    content_length: bool = True
    drip: float = 0.0  # seconds between single bytes of the whole answer, status line included
    validators: bool = False  # send an ETag of the body (and `last_modified`); answer 304 when they match
    last_modified: str | None = None

    def not_modified(self, body: bytes, request: Mapping[str, str]) -> tuple[bool, dict[str, str]]:
        """(whether the request's validators match, the validator headers to send)."""
        if not self.validators:
            return False, {}
        sent = {"ETag": '"' + hashlib.sha256(body).hexdigest()[:16] + '"'}
        if self.last_modified:
            sent["Last-Modified"] = self.last_modified
        if "If-None-Match" in request:
            return request["If-None-Match"] == sent["ETag"], sent
        return bool(self.last_modified) and request.get("If-Modified-Since") == self.last_modified, sent


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    path: str
    headers: Mapping[str, str]
    at: float  # time.monotonic()


class LoopbackServer:
    """A stdlib HTTP server on 127.0.0.1 with routes a test programs; unknown paths get 404."""

    def __init__(self) -> None:
        self._routes: dict[str, list[Reply]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: list[Seen] = []
        self.answered: list[tuple[str, int]] = []  # (path, status) of every answer sent
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def route(self, path: str, *replies: Reply) -> str:
        """Serve replies in order for path (the last one repeats); returns the full URL."""
        with self._lock:
            self._routes[path] = list(replies)
        return self.url(path)

    def json(self, path: str, obj: Any, status: int = 200) -> str:  # noqa: ANN401
        return self.route(path, Reply(status, json.dumps(obj).encode(), {"Content-Type": "application/json"}))

    def bytes(self, path: str, data: Body, status: int = 200) -> str:
        return self.route(path, Reply(status, data))

    def conditional(self, path: str, data: Body, last_modified: str | None = None) -> str:
        """Serve data with an ETag (and Last-Modified), answering 304 to a request whose validators match."""
        return self.route(path, Reply(body=data, validators=True, last_modified=last_modified))

    def statuses(self, path: str) -> list[int]:
        """The statuses of the answers to path that were sent whole (a hang or a drip only once it ended):
        empty after a client gave up on one, when the client's deadline came first."""
        return [status for seen, status in self.answered if seen == path]

    def redirect(self, path: str, location: str, status: int = 302) -> str:
        return self.route(path, Reply(status, headers={"Location": location}))

    def drip(self, path: str, body: bytes, every: float = 0.2) -> str:
        """Answer one byte at a time (headers too), `every` seconds apart: a slow-drip server."""
        return self.route(path, Reply(body=body, drip=every))

    def hang(self, path: str, seconds: float = 30.0) -> str:
        return self.route(path, Reply(delay=seconds, body=b"too late"))

    def oversized(self, path: str, size: int, content_length: bool = True) -> str:
        return self.route(path, Reply(size=size, content_length=content_length))

    def hits(self, path: str) -> list[Seen]:
        return [r for r in self.requests if r.path == path]

    def _next(self, path: str) -> Reply:
        with self._lock:
            replies = self._routes.get(path)
            if not replies:
                return Reply(404, b"not found")
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                path = self.path.split("?", 1)[0]
                server.requests.append(Seen(path, dict(self.headers.items()), time.monotonic()))
                reply = server._next(path)
                if reply.delay and server._stop.wait(reply.delay):
                    return
                body = reply.body() if callable(reply.body) else reply.body
                size = reply.size if reply.size is not None else len(body)
                if reply.drip:
                    self._drip(path, reply, body)
                    return
                unchanged, validators = reply.not_modified(body, dict(self.headers.items()))
                status = 304 if unchanged else reply.status
                server.answered.append((path, status))
                try:
                    self.send_response(status)
                    for key, value in {**reply.headers, **validators}.items():
                        self.send_header(key, value)
                    if unchanged:
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    if reply.content_length:
                        self.send_header("Content-Length", str(size))
                    self.end_headers()
                    if reply.size is None:
                        self.wfile.write(body)
                        return
                    chunk = b"\0" * 65536
                    for start in range(0, size, len(chunk)):
                        self.wfile.write(chunk[: min(len(chunk), size - start)])
                except OSError:
                    return  # the client hung up (e.g. it refused an oversized body)

            def _drip(self, path: str, reply: Reply, body: bytes) -> None:
                head = f"HTTP/1.1 {reply.status} OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                for i in range(len(head) + len(body)):
                    if server._stop.wait(reply.drip):
                        return
                    try:
                        self.wfile.write((head + body)[i : i + 1])
                        self.wfile.flush()
                    except OSError:
                        return
                server.answered.append((path, reply.status))  # the last byte is out

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002, ANN401
                return

        return Handler

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def http_server() -> Iterator[LoopbackServer]:
    """A fresh loopback HTTP server for one test."""
    server = LoopbackServer().start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def snapshot_dir() -> Path:
    """The real upstream snapshot (../shared/upstream)."""
    if not (SNAPSHOT / "MANIFEST.json").is_file():
        pytest.fail(f"upstream snapshot not found at {SNAPSHOT}: `make test-data` fetches it")
    return SNAPSHOT


@pytest.fixture(scope="session")
def source_specs() -> Mapping[str, SourceSpec]:
    """The shipped source registry."""
    return default_registry()


@pytest.fixture(scope="session")
def mirror_factory(
    snapshot_dir: Path, source_specs: Mapping[str, SourceSpec], tmp_path_factory: pytest.TempPathFactory
) -> Callable[..., Mirror]:
    """`mirror_factory(["hijacklibs", "cisa_kev"], fresh=False)`: local bare repos of those sources.

    Cached per subset for the session; ask for `fresh=True` before changing it with `add_commit`.
    """
    cache: dict[frozenset[str], Mirror] = {}

    def make(sources: list[str], *, fresh: bool = False) -> Mirror:
        key = frozenset(sources)
        if fresh or key not in cache:
            target = tmp_path_factory.mktemp("mirror")
            mirror = build_mirror(snapshot_dir, target, specs=source_specs, sources=sorted(key))
            if fresh:
                return mirror
            cache[key] = mirror
        return cache[key]

    return make


def serve_mirror(server: LoopbackServer, mirror: Mirror) -> tuple[str, dict[str, str]]:
    """Serve the mirror's releases API and feeds over loopback HTTP, with ETags (a request naming the current
    one is answered 304); (api base, feed URLs)."""
    api_root = mirror.root / "api"
    for latest in api_root.rglob("latest"):
        server.conditional("/api/" + latest.relative_to(api_root).as_posix(), latest.read_bytes)
    feeds = {}
    for name in mirror.feeds:
        path = mirror.feed_path(name)
        feeds[name] = server.conditional("/" + path.relative_to(mirror.root).as_posix(), path.read_bytes)
    return server.url("/api"), feeds


@pytest.fixture
def upstream_config(http_server: LoopbackServer) -> Callable[..., UpstreamConfig]:
    """`upstream_config(mirror, via_http=False, **changes)`: an UpstreamConfig reading that mirror.

    Git always comes from the bare repos (file://). With via_http the releases API and feeds
    are served by `http_server`; otherwise they are read as file:// URLs. Timeouts and retry
    waits are small, loopback (LoopbackPolicy) and file:// are allowed; `changes` override any field.
    """

    def make(mirror: Mirror, *, via_http: bool = False, **changes: Any) -> UpstreamConfig:  # noqa: ANN401
        if via_http:
            api_base, feeds = serve_mirror(http_server, mirror)
        else:
            api_base, feeds = mirror.api_base, dict(mirror.feeds)
        cfg = UpstreamConfig(policy=LoopbackPolicy(), limits=FAST_RETRIES, probe_timeout=10.0, fetch_timeout=30.0)
        cfg = cfg.with_mirror(mirror.repos, feeds, api_base)
        return dataclasses.replace(cfg, **changes)

    return make
