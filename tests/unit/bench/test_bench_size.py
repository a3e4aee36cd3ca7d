"""bench/ stays no larger than the command line: every file's lines, both folders, caches aside."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def lines(folder: Path) -> int:
    files = [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return sum(len(p.read_bytes().splitlines()) for p in files)


def test_bench_is_no_larger_than_the_command_line() -> None:
    bench, cli = lines(ROOT / "bench"), lines(ROOT / "secrag_cli")
    assert bench <= cli, f"bench/ has {bench:,} lines, the command line (secrag_cli/) {cli:,}: fold or retire a bench"
