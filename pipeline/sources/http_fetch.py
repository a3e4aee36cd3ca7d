"""HTTP(S) and file:// downloads with a URL policy, size cap, time budget and bounded retries."""

from __future__ import annotations

import io
import json
import logging
import random
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin

import httpx

from secrag.errors import FetchError

from .upstream import UpstreamConfig
from .url_policy import check_url, file_path

log = logging.getLogger(__name__)

MAX_REDIRECTS = 5
CHUNK = 64 * 1024
USER_AGENT = "secrag-fetcher"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class _Retryable(Exception):
    """A transient failure: 429, 5xx, a timeout or a dropped connection."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


@dataclass(frozen=True)
class _Budget:
    """The wall-clock budget of one call, retries and redirects included."""

    total: float
    deadline: float

    @classmethod
    def start(cls, seconds: float) -> _Budget:
        return cls(seconds, time.monotonic() + seconds)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def op_timeout(self) -> float:
        # Half the budget per network operation leaves room for one retry after a stall.
        return max(0.01, min(self.remaining(), self.total / 2))


def _retry_after(value: str | None, cap: float) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(0.0, min(seconds, cap))


def _copy_capped(
    chunks: Iterable[bytes], sink: IO[bytes], url: str, cfg: UpstreamConfig, budget: _Budget | None
) -> int:
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > cfg.max_bytes:
            raise FetchError(
                f"{url}: response exceeds the {cfg.max_bytes}-byte limit",
                hint="raise SECRAG_HTTP_MAX_BYTES if this upstream really grew",
            )
        if budget is not None and budget.remaining() <= 0:
            raise FetchError(f"{url}: download did not finish within {budget.total:.1f} s")
        sink.write(chunk)
    return size


def _read_file(url: str, sink: IO[bytes], cfg: UpstreamConfig) -> None:
    path = file_path(url)
    if not path.is_file():
        raise FetchError(f"{url}: no such file")
    if path.stat().st_size > cfg.max_bytes:
        raise FetchError(f"{url}: file of {path.stat().st_size} bytes exceeds the {cfg.max_bytes}-byte limit")
    with path.open("rb") as handle:
        _copy_capped(iter(lambda: handle.read(CHUNK), b""), sink, url, cfg, None)


def _headers(url: str, cfg: UpstreamConfig) -> dict[str, str]:
    headers = {"User-Agent": USER_AGENT}
    if cfg.is_api_url(url):
        headers["Accept"] = "application/vnd.github+json"
        if cfg.github_token:
            headers["Authorization"] = f"Bearer {cfg.github_token}"
    return headers


def _check_response(url: str, resp: httpx.Response, cfg: UpstreamConfig) -> None:
    status = resp.status_code
    if status == 429 or status >= 500:
        raise _Retryable(f"HTTP {status}", _retry_after(resp.headers.get("Retry-After"), cfg.retry_after_cap))
    if not 200 <= status < 300:
        raise FetchError(f"{url}: HTTP {status} {resp.reason_phrase}".rstrip())
    length = resp.headers.get("Content-Length")
    if length and length.isdigit() and int(length) > cfg.max_bytes:
        raise FetchError(
            f"{url}: response of {length} bytes exceeds the {cfg.max_bytes}-byte limit",
            hint="raise SECRAG_HTTP_MAX_BYTES if this upstream really grew",
        )


def _attempt(client: httpx.Client, url: str, sink: IO[bytes], cfg: UpstreamConfig, budget: _Budget) -> None:
    current = url
    for _hop in range(MAX_REDIRECTS + 1):
        check_url(current, cfg)
        try:
            with client.stream(
                "GET", current, headers=_headers(current, cfg), timeout=httpx.Timeout(budget.op_timeout())
            ) as resp:
                if resp.status_code in _REDIRECTS:
                    location = resp.headers.get("Location")
                    if not location:
                        raise FetchError(f"{current}: HTTP {resp.status_code} without a Location header")
                    current = urljoin(current, location)
                    continue
                _check_response(current, resp, cfg)
                _copy_capped(resp.iter_bytes(CHUNK), sink, current, cfg, budget)
                return
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out ({type(exc).__name__})") from exc
        except httpx.UnsupportedProtocol as exc:
            raise FetchError(f"{current}: {exc}") from exc
        except httpx.TransportError as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
    raise FetchError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _fetch(
    url: str, cfg: UpstreamConfig, timeout: float | None, open_sink: Callable[[], AbstractContextManager[IO[bytes]]]
) -> None:
    """Write the body of url to a fresh sink per attempt; FetchError when it cannot be had."""
    parts = check_url(url, cfg)
    if parts.scheme == "file":
        with open_sink() as sink:
            _read_file(url, sink, cfg)
        return
    budget = _Budget.start(timeout if timeout is not None else cfg.fetch_timeout)
    with httpx.Client(follow_redirects=False) as client:
        for attempt in range(1, cfg.max_attempts + 1):
            try:
                with open_sink() as sink:
                    _attempt(client, url, sink, cfg, budget)
                return
            except _Retryable as exc:
                failure = f"{url}: {exc.reason} (attempt {attempt} of {cfg.max_attempts})"
                if attempt == cfg.max_attempts:
                    raise FetchError(failure, hint="upstream may be down; try again later") from exc
                wait = exc.retry_after
                if wait is None:
                    wait = cfg.retry_base * 2 ** (attempt - 1) + random.uniform(0, cfg.retry_base)
                if wait >= budget.remaining():
                    raise FetchError(
                        f"{failure}; no time left to retry within {budget.total:.1f} s",
                        hint="raise the probe/fetch timeout or try again later",
                    ) from exc
                log.warning(
                    "retrying upstream request",
                    extra={"url": url, "reason": exc.reason, "attempt": attempt, "wait_s": round(wait, 2)},
                )
                time.sleep(wait)


def get_bytes(url: str, cfg: UpstreamConfig, timeout: float | None = None) -> bytes:
    """The body of url (at most cfg.max_bytes)."""
    buffers: list[io.BytesIO] = []

    def sink() -> AbstractContextManager[IO[bytes]]:
        buffers.append(io.BytesIO())  # a fresh buffer per attempt
        return nullcontext(buffers[-1])

    _fetch(url, cfg, timeout, sink)
    return buffers[-1].getvalue()


def get_json(url: str, cfg: UpstreamConfig, timeout: float | None = None) -> Any:  # noqa: ANN401
    """The JSON document at url."""
    data = get_bytes(url, cfg, timeout)
    try:
        return json.loads(data)
    except ValueError as exc:
        raise FetchError(f"{url}: not valid JSON ({exc})") from exc


def download(url: str, dest: Path, cfg: UpstreamConfig, timeout: float | None = None) -> Path:
    """Stream url to dest (atomically: a partial file never stays behind); returns dest."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        _fetch(url, cfg, timeout, lambda: part.open("wb"))
        part.replace(dest)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return dest
