"""Reading a file that someone else controls: regular files only, inside a root, capped in size.

One reader for every such file (upstream checkouts, snapshot mirrors, file:// feeds), so the
rules are the same everywhere: a symlink, a FIFO, a device or a socket is refused (opening a
FIFO never blocks), a path that resolves outside `within` is refused, and the size cap holds
even for a file that grows while it is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from secrag.errors import SecragError

GONE = (errno.ENOENT, errno.ENOTDIR)  # errnos of a path with no file any more


class UnsafeFile(SecragError):
    """A file that must not be read; `reason` says why in a few words."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FileTooLarge(UnsafeFile):
    """A file over its size cap."""


class FileGone(UnsafeFile):
    """No file at the path any more (it, or a directory on its way, was removed or replaced)."""


class FileUnreadable(UnsafeFile):
    """A file that is there but could not be opened (permissions, an I/O error, a stale mount)."""


def _open(path: Path) -> int:
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise UnsafeFile("symlinks are refused")
        if not stat.S_ISREG(mode):
            raise UnsafeFile("not a regular file (directory, FIFO, device or socket)")
        # O_NOFOLLOW and O_NONBLOCK hold if the path is swapped after the check: no symlink, no waiting FIFO.
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile("symlinks are refused") from exc
        if exc.errno in GONE:
            raise FileGone("no such file") from exc
        raise FileUnreadable(f"unreadable: {exc.strerror or exc}") from exc


def read_capped(path: Path, max_bytes: int, *, within: Path | None = None) -> bytes:
    """The bytes of the regular file at path, at most max_bytes; UnsafeFile otherwise (FileGone when there is
    no file, FileUnreadable when one could not be opened); an error while reading is raised as it is."""
    if path.is_symlink():
        raise UnsafeFile("symlinks are refused")
    if within is not None and not path.resolve().is_relative_to(within.resolve()):
        raise UnsafeFile("path escapes its root folder")
    with os.fdopen(_open(path), "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFile("not a regular file (directory, FIFO, device or socket)")
        if info.st_size > max_bytes:
            raise FileTooLarge(f"file of {info.st_size} bytes exceeds the {max_bytes}-byte limit")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileTooLarge(f"file grew past the {max_bytes}-byte limit while it was read")
    return data
