"""Where a searcher takes its reader connection from: the pool, or a map's view of it that its deadline stops
(serving/mapping/stoppable.py)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any, Protocol

import psycopg


class Connections(Protocol):
    """Lends a connection for the block (psycopg_pool.ConnectionPool.connection)."""

    def connection(self, timeout: float | None = None) -> AbstractContextManager[psycopg.Connection[Any]]: ...
