"""Per-call cost of the plumbing every request goes through: the gate (rate check and slot), the search
result cache, the query-vector cache, the catalog's cached values, the tuned plans and the metrics route
label.

    python bench/plumbing.py [--calls 200000]

No store, no server: each path is timed in process (best of 5 runs of `--calls` calls) and printed in
microseconds per call, to compare against a request's ~20 ms. The gate runs with the default rates on a
simulated wall clock that admits every call: a keyed caller just under its 600 a minute (its window
full, the costliest case), anonymous callers from 5000 addresses in turn.
"""

from __future__ import annotations

import argparse
import hashlib
import time
import timeit
from collections.abc import Callable

import numpy as np

from serving.access.keys import ApiKeys, Principal
from serving.access.quotas import Gate
from serving.contract.query_classes import QUERY_TYPES
from serving.contract.requests import SearchRequest
from serving.contract.responses import SearchResponse
from serving.feedback.tuned_plans import TunedPlans
from serving.observability.metrics import route_template
from serving.plans.plans_file import load_plans
from serving.search.catalog import Cached
from serving.search.encoder import QueryEncoder
from serving.search.result_cache import ResultCache, cache_key
from serving.settings import ServingSettings

KEYS = ApiKeys({hashlib.sha256(b"bench-key").hexdigest(): Principal("acme", "alice", ("blue",))})


class Ticker:
    """A wall clock that moves `step` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now = time.time()
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class StubModel:
    """A model that is never run on the cached path."""

    model_id = "stub"
    dimensions = 4

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), self.dimensions), dtype=np.float32)


def _cases() -> dict[str, Callable[[], object]]:
    settings = ServingSettings(_env_file=None)  # type: ignore[call-arg]
    time.time = Ticker(0.055)  # read twice per admitted call: 0.11 s between a caller's requests
    gate = Gate(KEYS, settings)
    keyed = gate.caller("bench-key", "10.0.0.1")
    addresses = [f"10.0.{i // 256}.{i % 256}" for i in range(5000)]
    turn = iter(range(10**12))

    def slot() -> None:
        with gate.slot(keyed):
            pass

    cache = ResultCache(1024)
    request = SearchRequest(query="process injection")
    key = cache_key("v1", "model", Principal("acme", "alice", ("blue",)), request)
    response = SearchResponse.model_construct()
    cache.put(key, response)
    miss = cache_key("v2", "model", Principal(), request)
    encoder = QueryEncoder(StubModel(), cache_size=1024)  # type: ignore[arg-type]
    encoder.encode("lsass")
    evicting = [cache_key(f"v{i}", "model", Principal(), request) for i in range(4096)]
    cached = Cached(300.0)
    cached.get(lambda: {"T1055": "Process Injection"})
    plans = TunedPlans(load_plans(settings.plans_file), read=lambda: {sorted(QUERY_TYPES)[0]: 0.4})
    plans.current()
    route = type("Route", (), {"path_format": "/v1/docs/{doc_id}"})()
    scope = {"type": "http", "root_path": "", "route": route}
    return {
        "gate: keyed caller (rate check)": lambda: gate.caller("bench-key", "10.0.0.1"),
        "gate: anonymous caller, 5000 addresses": lambda: gate.caller(None, addresses[next(turn) % 5000]),
        "gate: slot (take and release)": slot,
        "result cache: hit": lambda: cache.get(key),
        "result cache: miss": lambda: cache.get(miss),
        "result cache: put": lambda: cache.put(key, response),
        "result cache: put, evicting": lambda: cache.put(evicting[next(turn) % 4096], response),
        "query vector cache: hit": lambda: encoder.encode("lsass"),
        "catalog value (fresh)": lambda: cached.get(dict),
        "tuned plans: current": plans.current,
        "metrics: route label": lambda: route_template(scope),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    args = parser.parse_args()
    for name, call in _cases().items():
        best = min(timeit.repeat(call, number=args.calls, repeat=5)) / args.calls
        print(f"{name:42s} {best * 1e6:8.3f} us")


if __name__ == "__main__":
    main()
