"""Who may call, and how much: the API-key requirement, per-caller request rates, failed-key limits and
request slots.

One gate for REST and MCP alike. A caller is an API key's principal, or an anonymous client
address. Each caller's requests are counted in a moving window (the `limits` library, in memory): a
tenth of a minute's requests in every window of a tenth of a minute, so its rate per minute with
bursts of a tenth of it, and the whole rate in every window of a minute. A map (POST /v1/map, MCP `map`)
is as many requests as the searches it runs: they are charged to the minute's window at once, and its
concurrent searches take the caller's free slots (`Gate.searches`). Every /v1 operation and MCP tool
also takes a slot from a small per-caller pool, shared by all anonymous callers together, so anonymous
traffic can never take every worker and database connection from keyed callers or from /readyz (which
takes none: a probe must stay cheap).
A key is looked up first: a valid one is admitted whatever its address did, so callers behind one proxy
address (when the proxy is not trusted, `--forwarded-allow-ips`) are not locked out by another's typos.
An unknown key counts against its client address (the peer, or X-Forwarded-For's client when uvicorn
trusts the proxy) in a window of its own (bursts of half its rate); past it the address's unknown keys
are 429 instead of 401. Guessing stays hopeless because keys are long and random (serving/access/
key_strength.py refuses weak ones at start-up), not because of this window, which only slows floods.
Each counted failure is logged with the address, never the key. Refusals are 429 with Retry-After: when
the oldest request of the window leaves it.

Every count lives in this process: with `secrag serve --workers N` each worker process keeps its own
windows and slots, and a caller's connections are spread over the workers by the kernel, so a caller may
get up to N times each rate, failed-key allowance and slot count (docs/security.md#exposure).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from limits import RateLimitItem, RateLimitItemPerSecond
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from serving.access.keys import ANONYMOUS, ApiKeys, Principal
from serving.contract.errors import KeyRequired, TooManyRequests, UnknownApiKey
from serving.settings import ServingSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """A resolved caller: what it may see, and which quota it draws from."""

    principal: Principal
    bucket: str
    anonymous: bool


def window(rate_per_minute: int, burst: int) -> RateLimitItem | None:
    """`burst` requests per window of whole seconds, at most `rate_per_minute` on average; None: no limit."""
    if rate_per_minute <= 0:
        return None
    burst = max(1, burst)
    return RateLimitItemPerSecond(burst, max(1, math.ceil(60 * burst / rate_per_minute)))


class Gate:
    """Resolves callers and enforces their quotas (thread-safe)."""

    def __init__(self, keys: ApiKeys, settings: ServingSettings) -> None:
        self._keys = keys
        self._require_key = settings.require_api_key
        self._rates = {False: settings.rate_per_minute, True: settings.anonymous_rate_per_minute}
        self._windows = {anonymous: window(rate, rate // 10) for anonymous, rate in self._rates.items()}
        # the whole minute's rate: a map's searches are charged here at once (more than a tenth's burst)
        self._minutes = {anonymous: window(rate, rate) for anonymous, rate in self._rates.items()}
        self._slots = {False: settings.heavy_concurrency, True: settings.anonymous_heavy_concurrency}
        failures = settings.failed_keys_per_minute
        self._failure_refusal = f"more than {failures} unknown API keys a minute from this address; slow down"
        self._failures = window(failures, failures // 2)  # a few typos in a row are not an attack
        self._limiter = MovingWindowRateLimiter(MemoryStorage())  # keys expire with their window
        self._lock = threading.Lock()
        self._busy: dict[str, int] = {}

    def caller(self, key: str | None, address: str | None) -> Caller:
        """The caller presenting key from address, admitted by its rate; KeyRequired / TooManyRequests,
        UnknownApiKey for a key that is not configured."""
        if key:
            principal = self._resolve(key, address or "?")
        elif self._require_key:
            raise KeyRequired("an API key is required (X-API-Key or Authorization: Bearer)")
        else:
            principal = ANONYMOUS
        anonymous = not key
        bucket = f"anon:{address or '?'}" if anonymous else f"key:{principal.tenant}/{principal.user or ''}"
        refusal = f"more than {self._rates[anonymous]} requests a minute; slow down"
        limit, minute = self._windows[anonymous], self._minutes[anonymous]
        if minute is not None and not self._limiter.test(minute, bucket):  # a refusal takes no burst place
            self._refuse(minute, bucket, refusal)
        if limit is not None and not self._limiter.hit(limit, bucket):
            self._refuse(limit, bucket, refusal)
        if minute is not None:
            self._limiter.hit(minute, bucket)
        return Caller(principal, bucket, anonymous)

    def _resolve(self, key: str, address: str) -> Principal:
        """The key's principal. A valid key is admitted whatever its address's failures (callers behind one
        proxy share it); an unknown key from an address that failed too often lately is refused (429),
        otherwise counted against that address and answered 401."""
        try:
            return self._keys.resolve(key)
        except UnknownApiKey:
            limit, bucket = self._failures, f"fail:{address}"
            if limit is not None and not self._limiter.hit(limit, bucket):
                self._refuse(limit, bucket, self._failure_refusal)
            log.warning("unknown API key", extra={"client": address})  # never the key: it may be a near miss
            raise

    def _refuse(self, limit: RateLimitItem, bucket: str, refusal: str) -> None:
        reset = self._limiter.get_window_stats(limit, bucket).reset_time  # when the window frees
        raise TooManyRequests(refusal, retry_after=math.floor(reset - time.time()) + 1)

    @contextmanager
    def slot(self, caller: Caller) -> Iterator[None]:
        """A slot for one operation; TooManyRequests when the caller's slots are all taken."""
        with self._taken(caller, wanted=1, required=1):
            yield

    @contextmanager
    def searches(self, caller: Caller, count: int, width: int) -> Iterator[int]:
        """A map's admission: its `count` searches charged to the caller's requests a minute (the map's own
        request counted as its first search), and up to `width - 1` more of the caller's slots for its
        concurrent searches, as many as are free (a map never waits for them). Yields the searches it may run
        at once (one at least: the map's own slot); TooManyRequests when the minute has no room for them
        (Retry-After: the window's minute, since a map needs many places, not the next one)."""
        minute, rate = self._minutes[caller.anonymous], self._rates[caller.anonymous]
        if minute is not None and count > 1 and not self._limiter.hit(minute, caller.bucket, cost=count - 1):
            refusal = (
                f"a map of {count} sentences runs {count} searches, more than this caller's {rate} requests a "
                "minute: send the text in parts"
                if count > rate
                else f"a map of {count} searches would pass {rate} requests a minute"
            )
            raise TooManyRequests(refusal, retry_after=60)
        with self._taken(caller, wanted=width - 1, required=0) as extra:
            yield 1 + extra

    @contextmanager
    def _taken(self, caller: Caller, *, wanted: int, required: int) -> Iterator[int]:
        """Up to `wanted` of the caller's slots (all anonymous callers share one pool), as many as are free,
        held while in the block; TooManyRequests when fewer than `required` are."""
        limit = self._slots[caller.anonymous]
        pool = "anon" if caller.anonymous else caller.bucket
        with self._lock:
            free = wanted if limit <= 0 else min(wanted, limit - self._busy.get(pool, 0))
            if free < required:
                raise TooManyRequests(f"more than {limit} requests at once; wait for one to finish", retry_after=1)
            taken = max(0, free)
            self._busy[pool] = self._busy.get(pool, 0) + taken
        try:
            yield taken
        finally:
            with self._lock:
                self._busy[pool] -= taken
