"""Capped downloads: the URL policy on every hop, vetted addresses, a size cap, one hard time budget, retries.

The one HTTP(S) and file:// client of secrag: the pipeline's probes and fetches and the API's
upstream refetch both use it. Connections go only to addresses the policy vetted, and no socket
operation outlives the call's budget (secrag/net/transport.py). Transient failures (429, 5xx, timeouts,
dropped connections) are retried by tenacity with exponential backoff and jitter, honouring Retry-After up to a cap,
and never past the call's time budget. A request refused because an API's rate limit is used up is not
retried (FetchRateLimited says until when). `get_conditional` sends validators (If-None-Match,
If-Modified-Since) and answers 304 without a body.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO
from urllib.parse import SplitResult, urljoin

import httpx
import tenacity

from secrag.errors import FetchError, FetchRateLimited, FetchTimeout, FetchTooLarge
from secrag.files.safe_files import FileTooLarge, UnsafeFile, read_capped
from secrag.net import transport
from secrag.net.download_limits import Budget, DownloadLimits, Retryable, retry_after
from secrag.net.rate_limits import refused_until
from secrag.net.url_policy import UrlPolicy, file_path

log = logging.getLogger(__name__)

MAX_REDIRECTS = 5
CHUNK = 64 * 1024
USER_AGENT = "secrag-fetcher"
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TOO_LARGE_HINT = "raise SECRAG_HTTP_MAX_BYTES if this upstream really grew"

# Extra request headers for a URL (the pipeline adds GitHub's Accept and token on API URLs).
HeadersFor = Callable[[SplitResult], Mapping[str, str]]
OpenSink = Callable[[], AbstractContextManager[IO[bytes]]]


def _too_large(url: str, what: str) -> FetchTooLarge:
    return FetchTooLarge(f"{url}: {what}", hint=_TOO_LARGE_HINT)


def _copy_capped(response: httpx.Response, sink: IO[bytes], url: str, max_bytes: int, budget: Budget) -> None:
    size = 0
    for chunk in response.iter_bytes(CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(url, f"response exceeds the {max_bytes}-byte limit")
        if budget.remaining() <= 0:
            raise FetchTimeout(f"{url}: download did not finish within {budget.total:.1f} s")
        sink.write(chunk)


@dataclass(frozen=True)
class Answer:
    """What a (conditional) GET got: its status (200, or 304 without a body) and the response headers."""

    status: int
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)

    @property
    def not_modified(self) -> bool:
        return self.status == 304


def _check_response(url: str, resp: httpx.Response, limits: DownloadLimits) -> None:
    status = resp.status_code
    if status in (403, 429) and resp.headers.get("x-ratelimit-remaining") == "0":
        # Waiting within the call cannot help (the window resets within the hour), and asking again
        # while refused risks a longer ban: the caller backs off until the reset.
        raise FetchRateLimited(f"{url}: HTTP {status}: the rate limit is used up", reset_at=refused_until(resp.headers))
    if status == 429 or status >= 500:
        raise Retryable(f"HTTP {status}", retry_after(resp.headers.get("Retry-After"), limits.retry_after_cap))
    if not 200 <= status < 300:
        raise FetchError(f"{url}: HTTP {status} {resp.reason_phrase}".rstrip())
    length = resp.headers.get("Content-Length")
    if length and length.isdigit() and int(length) > limits.max_bytes:
        raise _too_large(url, f"response of {length} bytes exceeds the {limits.max_bytes}-byte limit")


@dataclass(frozen=True)
class _Call:
    """One download: where, under which policy and limits, with which extra headers."""

    url: str
    policy: UrlPolicy
    limits: DownloadLimits
    budget: Budget
    headers_for: HeadersFor | None
    validators: Mapping[str, str] = field(default_factory=dict)  # If-None-Match, If-Modified-Since

    def headers(self, parts: SplitResult) -> dict[str, str]:
        extra = self.headers_for(parts) if self.headers_for else {}
        return {"User-Agent": USER_AGENT, **extra, **self.validators}

    def attempt(self, client: httpx.Client, sink: IO[bytes]) -> tuple[int, dict[str, str]]:
        """One try, following redirects (each hop checked against the policy): the final status and headers."""
        current = self.url
        for _hop in range(MAX_REDIRECTS + 1):
            parts = self.policy.check(current)
            try:
                timeout = httpx.Timeout(self.budget.op_timeout())
                with client.stream("GET", current, headers=self.headers(parts), timeout=timeout) as resp:
                    if resp.status_code in _REDIRECTS:
                        location = resp.headers.get("Location")
                        if not location:
                            raise FetchError(f"{current}: HTTP {resp.status_code} without a Location header")
                        current = urljoin(current, location)
                        continue
                    if resp.status_code == 304 and self.validators:
                        return 304, dict(resp.headers)
                    _check_response(current, resp, self.limits)
                    _copy_capped(resp, sink, current, self.limits.max_bytes, self.budget)
                    return resp.status_code, dict(resp.headers)
            except httpx.TimeoutException as exc:
                raise Retryable(f"timed out ({type(exc).__name__})", timeout=True) from exc
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise FetchError(f"{current}: {exc}") from exc
            except httpx.TransportError as exc:
                raise Retryable(f"{type(exc).__name__}: {exc}") from exc
        raise FetchError(f"{self.url}: more than {MAX_REDIRECTS} redirects")

    def wait(self, state: tenacity.RetryCallState) -> float:
        """Retry-After when the server sent one, else exponential backoff with jitter."""
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, Retryable) and exc.retry_after is not None:
            return exc.retry_after
        backoff = tenacity.wait_exponential_jitter(multiplier=self.limits.retry_base, jitter=self.limits.retry_base)
        return float(backoff(state))

    def stop(self, state: tenacity.RetryCallState) -> bool:
        """Stop after the last attempt, or when the next wait would pass the budget."""
        return state.attempt_number >= self.limits.max_attempts or state.upcoming_sleep >= self.budget.remaining()

    def give_up(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        assert isinstance(exc, Retryable)  # only Retryable is retried
        failure = f"{self.url}: {exc.reason} (attempt {state.attempt_number} of {self.limits.max_attempts})"
        error = FetchTimeout if exc.timeout else FetchError
        if state.attempt_number >= self.limits.max_attempts:
            raise error(failure, hint="upstream may be down; try again later") from exc
        raise error(
            f"{failure}; no time left to retry within {self.budget.total:.1f} s",
            hint="raise the probe/fetch timeout or try again later",
        ) from exc

    def before_sleep(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "retrying upstream request",
            extra={
                "url": self.url,
                "reason": getattr(exc, "reason", str(exc)),
                "attempt": state.attempt_number,
                "wait_s": round(state.upcoming_sleep, 2),
            },
        )

    def run(self, open_sink: OpenSink) -> tuple[int, dict[str, str]]:
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(Retryable),
            wait=self.wait,
            stop=self.stop,
            before_sleep=self.before_sleep,
            retry_error_callback=self.give_up,
        )
        answer: tuple[int, dict[str, str]] = (0, {})
        with transport.client(self.policy, self.budget.deadline) as client:
            for attempt in retrying:
                with attempt, open_sink() as sink:
                    answer = self.attempt(client, sink)
        return answer


def _read_file(url: str, sink: IO[bytes], max_bytes: int) -> None:
    try:
        sink.write(read_capped(file_path(url), max_bytes))
    except FileTooLarge as exc:
        raise FetchTooLarge(f"{url}: {exc.reason}", hint=_TOO_LARGE_HINT) from exc
    except UnsafeFile as exc:
        raise FetchError(f"{url}: {exc.reason}") from exc


def fetch_into(
    url: str,
    policy: UrlPolicy,
    limits: DownloadLimits,
    timeout: float,
    open_sink: OpenSink,
    headers_for: HeadersFor | None = None,
    validators: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, str]]:
    """Write the body of url into a fresh sink per attempt, within `timeout` seconds in all; the final
    status and response headers (a 304 to `validators` writes nothing; file:// answers 200, no headers)."""
    parts = policy.check(url)
    if parts.scheme == "file":
        with open_sink() as sink:
            _read_file(url, sink, limits.max_bytes)
        return 200, {}
    return _Call(url, policy, limits, Budget.start(timeout), headers_for, dict(validators or {})).run(open_sink)


def get_bytes(
    url: str, policy: UrlPolicy, limits: DownloadLimits, timeout: float, headers_for: HeadersFor | None = None
) -> bytes:
    """The body of url (at most limits.max_bytes)."""
    buffers: list[io.BytesIO] = []

    def sink() -> AbstractContextManager[IO[bytes]]:
        buffers.append(io.BytesIO())  # a fresh buffer per attempt
        return nullcontext(buffers[-1])

    fetch_into(url, policy, limits, timeout, sink, headers_for)
    return buffers[-1].getvalue()


def get_conditional(
    url: str,
    policy: UrlPolicy,
    limits: DownloadLimits,
    timeout: float,
    headers_for: HeadersFor | None = None,
    validators: Mapping[str, str] | None = None,
) -> Answer:
    """The body of url unless the validators (If-None-Match / If-Modified-Since) show it unchanged (304)."""
    buffers: list[io.BytesIO] = []

    def sink() -> AbstractContextManager[IO[bytes]]:
        buffers.append(io.BytesIO())
        return nullcontext(buffers[-1])

    status, headers = fetch_into(url, policy, limits, timeout, sink, headers_for, validators)
    return Answer(status, b"" if status == 304 else buffers[-1].getvalue(), headers)


def download(
    url: str,
    dest: Path,
    policy: UrlPolicy,
    limits: DownloadLimits,
    timeout: float,
    headers_for: HeadersFor | None = None,
) -> Path:
    """Stream url to dest (atomically: a partial file never stays behind); returns dest."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        fetch_into(url, policy, limits, timeout, lambda: part.open("wb"), headers_for)
        part.replace(dest)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    return dest
