"""The bench store: the database `secrag_bench` that build.py makes on the embedded server of `.secrag/bench`."""

from __future__ import annotations

BENCH_DB = "secrag_bench"


def bench_store_url() -> str:
    """Its URL, the server started if it is not running (never SECRAG_DATABASE_URL's: name that with --database-url)."""
    from secrag.db import database
    from secrag.settings import Settings

    settings = Settings(_env_file=None, data_dir=".secrag/bench", database_url=None)  # type: ignore[call-arg]
    return database.with_database(database.server_url(settings), BENCH_DB)


if __name__ == "__main__":  # STORE=$(python bench/lib/store.py): the URL for the benches' --database-url
    print(bench_store_url())
