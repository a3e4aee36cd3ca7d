"""The bench store: the database bench/build.py builds on the embedded server of its data directory."""

from __future__ import annotations

from pathlib import Path

BENCH_DB = "secrag_bench"
BENCH_DIR = Path(".secrag/bench")


def bench_store_url(data_dir: Path = BENCH_DIR, *, create: bool = False) -> str:
    """The URL of the bench store in `data_dir`, its embedded server started if it is not running (never
    SECRAG_DATABASE_URL's server: a bench names that one with --database-url)."""
    from secrag.db import database
    from secrag.settings import Settings

    settings = Settings(_env_file=None, data_dir=data_dir, database_url=None)  # type: ignore[call-arg]
    return database.with_database(database.server_url(settings, create=create), BENCH_DB)


if __name__ == "__main__":  # STORE=$(python bench/lib/store.py): the URL for the benches' --database-url
    print(bench_store_url())
