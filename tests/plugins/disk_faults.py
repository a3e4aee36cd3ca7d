"""Real disk faults at a chosen moment of a directory walk: the fault is done to the disk just before or just
after os.walk lists one directory, and the walk then meets what the operating system says of it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest


class _Listed:
    """A directory listing read whole, then handed to os.walk (what it sees of a directory changed since)."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self._entries = iter(entries)

    def __enter__(self) -> _Listed:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __iter__(self) -> _Listed:
        return self

    def __next__(self) -> os.DirEntry[str]:
        return next(self._entries)


def before_listing(monkeypatch: pytest.MonkeyPatch, target: Path, fault: Callable[[], None]) -> None:
    """Run `fault` on the disk just before os.walk lists `target` (the listing itself is the real one)."""
    real = os.scandir

    def scandir(path):  # noqa: ANN001, ANN202 - os.scandir's signature
        if isinstance(path, str) and Path(path) == target:  # rmtree lists by descriptor
            fault()
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def after_listing(monkeypatch: pytest.MonkeyPatch, target: Path, fault: Callable[[], None]) -> None:
    """Run `fault` on the disk once `target` has been listed, before its entries are looked at."""
    real = os.scandir

    def scandir(path):  # noqa: ANN001, ANN202 - os.scandir's signature
        if not isinstance(path, str) or Path(path) != target:
            return real(path)
        with real(path) as listing:
            entries = list(listing)
        fault()
        return _Listed(entries)

    monkeypatch.setattr(os, "scandir", scandir)


def failing_open(monkeypatch: pytest.MonkeyPatch, target: Path, error: OSError) -> None:
    """An injected fault: opening `target` raises `error` (what permissions, a disk or a stale mount may say)."""
    real = os.open

    def opener(path, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202 - os.open's signature
        if Path(path) == target:
            raise error
        return real(path, *args, **kw)

    monkeypatch.setattr(os, "open", opener)
