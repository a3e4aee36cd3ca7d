"""The network layer under secrag's HTTP client: vetted addresses and a hard deadline.

Every TCP connection goes to an address the URL policy vetted: the host name is resolved here,
every address it resolves to must pass `UrlPolicy.address_allowed` (public unicast in
production), and the socket connects to that vetted address itself, so a DNS answer cannot
change between the check and the connection (DNS rebinding). TLS still verifies the host name.

Every socket operation (connect, TLS handshake, each read and write) gets at most the time left
until the call's deadline, so a server that drips one byte at a time cannot stretch a download
past its budget.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import httpcore
import httpx

from secrag.net.url_policy import UrlPolicy

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]  # httpcore's


class _DeadlineStream(httpcore.NetworkStream):
    """A connected stream whose every operation ends by the deadline."""

    def __init__(self, inner: httpcore.NetworkStream, backend: VettedBackend) -> None:
        self._inner = inner
        self._backend = backend

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._backend.clamp(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._backend.clamp(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        timeout = self._backend.clamp(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._backend)

    def get_extra_info(self, info: str) -> Any:  # noqa: ANN401 - httpcore's signature
        return self._inner.get_extra_info(info)


class VettedBackend(httpcore.NetworkBackend):
    """Connects only to vetted addresses, and never past the deadline (time.monotonic())."""

    def __init__(self, policy: UrlPolicy, deadline: float) -> None:
        self._policy = policy
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def clamp(self, timeout: float | None, error: type[Exception]) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise error("the time budget of this download is spent")
        return left if timeout is None else min(timeout, left)

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._policy.vetted_addresses(host, port)  # FetchError when any is refused
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    address,
                    port,
                    timeout=self.clamp(timeout, httpcore.ConnectTimeout),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return _DeadlineStream(stream, self)
        assert failure is not None  # vetted_addresses never returns an empty list
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not upstreams")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


@lru_cache(maxsize=1)
def _tls() -> ssl.SSLContext:
    # Loading the CA bundle takes tens of milliseconds; one context serves every client (it is thread-safe).
    return httpx.create_ssl_context()


_HTTPCORE_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.ProxyError,
    httpcore.UnsupportedProtocol,
)


@contextmanager
def _httpx_errors() -> Iterator[None]:
    """httpcore's errors as httpx's of the same name (httpx.ConnectTimeout, httpx.ReadError, ...), the most
    specific first, as httpx's own transport raises them; any other error passes unchanged."""
    try:
        yield
    except _HTTPCORE_ERRORS as exc:
        for cls in type(exc).__mro__:
            mapped = getattr(httpx, cls.__name__, None)
            if isinstance(mapped, type) and issubclass(mapped, httpx.TransportError):
                raise mapped(str(exc)) from exc
        raise


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class VettedTransport(httpx.BaseTransport):
    """An httpx transport over an httpcore pool on a VettedBackend; no proxies (their address could not
    be vetted). httpx's HTTPTransport takes no network backend, so this is its request and response
    translation, through public httpx and httpcore API only."""

    def __init__(self, policy: UrlPolicy, deadline: float) -> None:
        self._pool = httpcore.ConnectionPool(ssl_context=_tls(), network_backend=VettedBackend(policy, deadline))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Body(response.stream),  # type: ignore[arg-type]  # a sync pool's stream is iterable
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


def client(policy: UrlPolicy, deadline: float) -> httpx.Client:
    """An HTTP client for one download: vetted addresses, the deadline, no redirects, no env proxies."""
    return httpx.Client(transport=VettedTransport(policy, deadline), follow_redirects=False, trust_env=False)
