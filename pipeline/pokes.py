"""Pokes in a source sensor's tick: the sensor ticks every POKE_TICK_SECONDS with one database read, and probes the
upstream only when a webhook poked the source (`secrag hooks`) or its poll interval has passed since its last
probe. A poke says nothing but "look now": the probe still asks the upstream itself. A poke names its hook, and
every source on that hook reads it: a repository's webhook pokes each source on the repository."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import psycopg

from secrag.db.queries import Queries
from secrag.hook_names import repository_of

from .sources.registry import SourceSpec

POKE_TICK_SECONDS = 30  # how soon a poke is read; each tick is one indexed read of pokes and sources


@dataclass(frozen=True)
class Tick:
    """What one tick read: the newest unseen poke (None: not poked) and the last probe's time (None: never)."""

    poke: int | None
    probed_at: datetime | None

    def due(self, poll_interval: int, now: datetime, *, first: bool) -> str | None:
        """Why this tick probes (None: it does not). The first tick since the sensor started always probes."""
        if self.poke is not None:
            return "poked"
        if first or self.probed_at is None:
            return "first probe"
        if now - self.probed_at >= timedelta(seconds=poll_interval):
            return "poll interval"
        return None


def hooks_of(spec: SourceSpec) -> list[str]:
    """The hooks whose pokes this source reads: its own name (a feed's signed POST) and its repository's."""
    repository = repository_of(spec.repo) if spec.repo else None
    return [spec.name] if repository is None else [spec.name, repository]


def read_tick(conn: psycopg.Connection, queries: Queries, spec: SourceSpec) -> Tick:
    row = conn.execute(queries.poke_tick, {"source": spec.name, "hooks": hooks_of(spec)}).fetchone()
    return Tick(None, None) if row is None else Tick(row[0], row[1])


def mark_seen(conn: psycopg.Connection, queries: Queries, source: str, upto: int) -> None:
    """The pokes the source's probe answered, up to the newest one the tick read (a later one waits for the next
    tick); the other sources on the same hook answer them on their own ticks."""
    conn.execute(queries.mark_pokes_seen, {"source": source, "upto": upto})
