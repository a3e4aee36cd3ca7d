"""Replica lag during publishes: a primary and a hot standby of the embedded distribution, streaming.

    python bench/replica_lag.py [--records 5000] [--body-chars 1500]

Starts both servers (tests/plugins/replication.py), migrates the primary, then publishes one source of
synthetic records three times: a first publish (all inserted), a rebuild (every record's text changed)
and a small change (one record). While each runs, the standby's lag as the API reads it (`replica_lag`,
serving/access/replica.py) is sampled every 20 ms; after each commit, the time until the standby serves
the primary's data version (what the result cache is keyed by). No embedding: the publish transaction is
what replicates. Prints one row per publish.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time

from psycopg import sql

from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from secrag.db import database, migrations
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from serving.access.replica import read_lag
from tests.plugins.replication import Replication, Server, primary_and_standby

SOURCE = "lag_bench"
WORDS = "adversary lsass credential dump process injection powershell rundll32 registry persistence beacon".split()


def _record(i: int, chars: int, edition: int) -> Record:
    words = [WORDS[(i * 7 + j * 3 + edition) % len(WORDS)] for j in range(chars // 9)]
    body = f"Record {i} edition {edition}. " + " ".join(words)
    return Record(source=SOURCE, upstream_id=f"r-{i}", title=f"Synthetic record {i}", body=body)


def _records(n: int, chars: int, edition: int) -> list[Record]:
    return [_record(i, chars, edition) for i in range(n)]


def _prepare(primary: Server) -> None:
    with database.connect(primary.url(), autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier("secrag")))
    with database.connect(primary.url("secrag"), autocommit=True) as conn:
        migrations.migrate(conn, sql_dir())
        Store(sql_dir()).register_source(conn, SourceRow(name=SOURCE, kind="online"))


def _publish(pair: Replication, queries: Queries, label: str, records: list[Record], version: str) -> None:
    samples: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        with database.connect(pair.standby.url("secrag", "secrag_reader"), autocommit=True) as conn:
            while not stop.is_set():
                lag = read_lag(conn, queries)
                samples.append(lag.seconds if lag.seconds is not None else float("nan"))
                time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    store = Store(sql_dir())
    started = time.monotonic()
    with database.connect(pair.primary.url("secrag"), autocommit=True) as conn:
        wal_before = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
        store.publish(conn, source=SOURCE, version=version, records=records, lookup={}, chunking=ChunkConfig())
        committed = time.monotonic()
        wal = conn.execute("SELECT pg_current_wal_lsn() - %s::pg_lsn", [wal_before[0] if wal_before else None])
        wal_bytes = int((wal.fetchone() or [0])[0])
        wanted = conn.execute(queries.data_version).fetchone()
    with database.connect(pair.standby.url("secrag", "secrag_reader"), autocommit=True) as conn:
        while conn.execute(queries.data_version).fetchone() != wanted:
            time.sleep(0.005)
    visible = time.monotonic() - committed
    time.sleep(0.1)
    stop.set()
    sampler.join()
    seen = [s for s in samples if s == s]
    over = sum(s > 0.5 for s in seen) / max(1, len(seen))
    print(
        f"| {label} | {len(records)} | {committed - started:.2f} | {wal_bytes / 1e6:.1f} | {visible * 1000:.0f} | "
        f"{max(seen, default=0.0):.2f} | {over:.0%} | {len(samples)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=5000)
    parser.add_argument("--body-chars", type=int, default=1500)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    queries = Queries(sql_dir(), "serving")
    with primary_and_standby(_prepare) as pair:
        pair.wait_for_replay()
        print(
            "| publish | records | publish s | WAL MB | commit to the standby's data version, ms "
            "| max lag read, s | readings over 0.5 s | readings |"
        )
        print("|---|---|---|---|---|---|---|---|")
        _publish(pair, queries, "first", _records(args.records, args.body_chars, 1), "v1")
        _publish(pair, queries, "rebuild (all changed)", _records(args.records, args.body_chars, 2), "v2")
        one_changed = [_record(0, args.body_chars, 3), *_records(args.records, args.body_chars, 2)[1:]]
        _publish(pair, queries, "one record changed", one_changed, "v3")


if __name__ == "__main__":
    main()
