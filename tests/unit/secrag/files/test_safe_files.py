"""The one reader for files others control: regular files only, inside a root, capped."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from secrag.files.safe_files import FileTooLarge, UnsafeFile, read_capped


def test_reads_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"hello")
    assert read_capped(tmp_path / "a.txt", 5, within=tmp_path) == b"hello"


def test_size_cap(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(FileTooLarge, match="11 bytes exceeds the 10-byte limit"):
        read_capped(tmp_path / "big", 10)


def test_symlinks_are_refused_even_inside_the_root(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafeFile, match="symlinks are refused"):
        read_capped(tmp_path / "link", 10, within=tmp_path)


def test_paths_escaping_the_root_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "secret").write_bytes(b"x")
    (root / "up").symlink_to(tmp_path, target_is_directory=True)  # an intermediate symlink
    with pytest.raises(UnsafeFile, match="escapes its root"):
        read_capped(root / "up" / "secret", 10, within=root)
    with pytest.raises(UnsafeFile, match="escapes its root"):
        read_capped(root / "sub" / ".." / ".." / "secret", 10, within=root)


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeFile, match="not a regular file"):
        read_capped(fifo, 10, within=tmp_path)


def test_socket_directory_and_missing_file(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(tmp_path / "s"))
        with pytest.raises(UnsafeFile, match="not a regular file"):
            read_capped(tmp_path / "s", 10)
    finally:
        sock.close()
    with pytest.raises(UnsafeFile, match="not a regular file"):
        read_capped(tmp_path, 10)
    with pytest.raises(UnsafeFile, match="no such file"):
        read_capped(tmp_path / "absent", 10)
