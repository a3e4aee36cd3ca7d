"""Who may call, and how much: the API-key requirement, per-caller request rates and heavy-query slots.

One gate for REST and MCP alike. A caller is an API key's principal, or an anonymous client
address. Each caller has a token bucket (its rate per minute, with up to a tenth of a minute's
requests in a burst); search and plan requests (query encoding plus the hybrid search) also take a
slot from a small per-caller pool, shared by all anonymous callers together, so anonymous traffic
can never take every worker and database connection from keyed callers or from /readyz.
Refusals are 429 with Retry-After.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from .auth import ApiKeys, Principal
from .errors import KeyRequired, TooManyRequests
from .settings import ServingSettings

_MAX_BUCKETS = 10_000  # anonymous addresses remembered (least recently seen dropped first)


@dataclass(frozen=True)
class Caller:
    """A resolved caller: what it may see, and which quota it draws from."""

    principal: Principal
    bucket: str
    anonymous: bool


class _Bucket:
    def __init__(self, capacity: float, now: float) -> None:
        self.tokens = capacity
        self.stamp = now


class Gate:
    """Resolves callers and enforces their quotas (thread-safe)."""

    def __init__(self, keys: ApiKeys, settings: ServingSettings, clock: Callable[[], float] = time.monotonic) -> None:
        self._keys = keys
        self._require_key = settings.require_api_key
        self._rates = {False: settings.rate_per_minute, True: settings.anonymous_rate_per_minute}
        self._slots = {False: settings.heavy_concurrency, True: settings.anonymous_heavy_concurrency}
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._busy: dict[str, int] = {}

    def caller(self, key: str | None, address: str | None) -> Caller:
        """The caller presenting key from address, admitted by its rate; KeyRequired / TooManyRequests."""
        principal = self._keys.resolve(key)  # UnknownApiKey for a key that is not configured
        anonymous = not key
        if anonymous and self._require_key:
            raise KeyRequired("an API key is required (X-API-Key or Authorization: Bearer)")
        bucket = f"anon:{address or '?'}" if anonymous else f"key:{principal.tenant}/{principal.user or ''}"
        caller = Caller(principal, bucket, anonymous)
        self._admit(caller)
        return caller

    def _admit(self, caller: Caller) -> None:
        rate = self._rates[caller.anonymous]
        if rate <= 0:
            return
        per_second, capacity = rate / 60.0, max(1.0, rate / 10.0)
        now = self._clock()
        with self._lock:
            bucket = self._buckets.pop(caller.bucket, None) or _Bucket(capacity, now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.stamp) * per_second)
            bucket.stamp = now
            self._buckets[caller.bucket] = bucket
            while len(self._buckets) > _MAX_BUCKETS:
                self._buckets.popitem(last=False)
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return
            wait = (1.0 - bucket.tokens) / per_second
        raise TooManyRequests(f"more than {rate} requests a minute; slow down", retry_after=math.ceil(wait))

    @contextmanager
    def heavy(self, caller: Caller) -> Iterator[None]:
        """A slot for one search or plan; TooManyRequests when the caller's slots are all taken."""
        limit = self._slots[caller.anonymous]
        pool = "anon" if caller.anonymous else caller.bucket  # all anonymous callers share one pool
        with self._lock:
            if limit > 0 and self._busy.get(pool, 0) >= limit:
                raise TooManyRequests(f"more than {limit} searches at once; wait for one to finish", retry_after=1)
            self._busy[pool] = self._busy.get(pool, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._busy[pool] -= 1
