"""Who may call, and how much: the API-key requirement, per-caller request rates, failed-key limits and
request slots.

One gate for REST and MCP alike. A caller is an API key's principal, or an anonymous client
address. Each caller has a token bucket (its rate per minute, with up to a tenth of a minute's
requests in a burst); every /v1 operation and MCP tool also takes a slot from a small per-caller
pool, shared by all anonymous callers together, so anonymous traffic can never take every worker and
database connection from keyed callers or from /readyz (which takes none: a probe must stay cheap).
A client address that presents unknown keys is charged in a bucket of its own, checked before any
key it presents is looked up, so guessing keys is as slow as that rate; each failure is logged with
the address, never the key. Refusals are 429 with Retry-After.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from serving.access.keys import ANONYMOUS, ApiKeys, Principal
from serving.contract.errors import KeyRequired, TooManyRequests, UnknownApiKey
from serving.settings import ServingSettings

log = logging.getLogger(__name__)
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
        self._failure_rate = settings.failed_keys_per_minute
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()  # requests, and failed keys ("fail:")
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
        caller = Caller(principal, bucket, anonymous)
        rate = self._rates[anonymous]
        self._take(bucket, rate, f"more than {rate} requests a minute; slow down")
        return caller

    def _resolve(self, key: str, address: str) -> Principal:
        """The key's principal. An address that failed too often lately is refused before its key is
        looked up (else a right guess would still get through); a failure costs it a token."""
        rate, bucket = self._failure_rate, f"fail:{address}"
        refusal = f"more than {rate} unknown API keys a minute from this address; slow down"
        burst = rate / 2  # a few typos in a row are not an attack
        self._take(bucket, rate, refusal, burst=burst, charge=False)
        try:
            return self._keys.resolve(key)
        except UnknownApiKey:
            log.warning("unknown API key", extra={"client": address})  # never the key: it may be a near miss
            self._take(bucket, rate, refusal, burst=burst, strict=False)
            raise

    def _take(
        self, name: str, rate: int, refusal: str, *, burst: float = 0.0, charge: bool = True, strict: bool = True
    ) -> None:
        """Refill bucket `name` (`rate` a minute, bursts of `burst`, else a tenth of it) and take a token
        (with `charge` false, only check that one is there); TooManyRequests(refusal) when none is, unless
        not `strict` (a failure, already answered, is charged whatever is left)."""
        if rate <= 0:
            return
        per_second, capacity = rate / 60.0, max(1.0, burst or rate / 10.0)
        now = self._clock()
        with self._lock:
            bucket = self._buckets.pop(name, None) or _Bucket(capacity, now)
            bucket.tokens = min(capacity, bucket.tokens + (now - bucket.stamp) * per_second)
            bucket.stamp = now
            self._buckets[name] = bucket
            while len(self._buckets) > _MAX_BUCKETS:
                self._buckets.popitem(last=False)
            if bucket.tokens >= 1.0 or not strict:
                bucket.tokens -= 1.0 if charge else 0.0
                return
            wait = (1.0 - bucket.tokens) / per_second
        raise TooManyRequests(refusal, retry_after=math.ceil(wait))

    @contextmanager
    def slot(self, caller: Caller) -> Iterator[None]:
        """A slot for one operation; TooManyRequests when the caller's slots are all taken."""
        limit = self._slots[caller.anonymous]
        pool = "anon" if caller.anonymous else caller.bucket  # all anonymous callers share one pool
        with self._lock:
            if limit > 0 and self._busy.get(pool, 0) >= limit:
                raise TooManyRequests(f"more than {limit} requests at once; wait for one to finish", retry_after=1)
            self._busy[pool] = self._busy.get(pool, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                self._busy[pool] -= 1
