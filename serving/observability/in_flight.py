"""How many API operations (/v1 requests and MCP requests) the process is serving at this moment (and, with
another `InFlight`, how many searches: serving/search/side_legs.py).

`MetricsMiddleware` (serving/observability/metrics.py) counts the /v1 ones and the MCP gate
(serving/mcp/gate.py) each MCP request, `/metrics` shows the count (`secrag_http_requests_in_flight`), and
two readers decide by it: a search's side legs (serving/search/side_legs.py), since a second statement for
one search pays off only while a core would otherwise be idle and a request that has not yet reached its
search (its body, its dependencies, the thread hop) will need a core in a moment; and the maps' spare turns
(serving/mapping/capacity.py), taken only while no request but maps is in flight.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class InFlight:
    """A count of requests in progress; calling it reads the count."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self) -> int:
        return self._count

    @contextmanager
    def counting(self) -> Iterator[None]:
        with self._lock:
            self._count += 1
        try:
            yield
        finally:
            with self._lock:
                self._count -= 1
