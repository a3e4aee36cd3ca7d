"""Released migrations are never edited: each file's checksum is the one stores recorded when they applied it."""

from __future__ import annotations

from pathlib import Path

from secrag.db.migrations import load_migrations
from secrag.files.package_data import sql_dir

RELEASED = Path(__file__).with_name("migration_checksums.txt")


def _released() -> dict[str, str]:
    lines = [line.split() for line in RELEASED.read_text().splitlines() if line and not line.startswith("#")]
    return {name: checksum for name, checksum in lines}


def test_no_released_migration_is_edited() -> None:
    files = {f"{m.version:04d}_{m.name}.sql": m.checksum for m in load_migrations(sql_dir() / "migrations")}
    edited = sorted(name for name, checksum in _released().items() if files.get(name) != checksum)
    assert not edited, f"released migrations edited or removed (stores that applied them refuse to migrate): {edited}"


def test_every_migration_is_listed() -> None:
    files = {f"{m.version:04d}_{m.name}.sql": m.checksum for m in load_migrations(sql_dir() / "migrations")}
    unlisted = [f"{name} {checksum}" for name, checksum in files.items() if name not in _released()]
    assert not unlisted, f"add these lines to {RELEASED.name}: {unlisted}"
