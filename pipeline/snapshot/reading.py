"""Reading a snapshot file: its manifest (and signature), the sizes its parts declare (against a bound and the
file) before a byte of them is read, every part's sha256 checked in one streaming pass of bounded blocks, then
the parts handed out in load order; anything else is SnapshotRefused."""

from __future__ import annotations

import hashlib
import logging
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from secrag.errors import SnapshotRefused
from secrag.settings import SnapshotSettings

from . import signature
from .manifest import MANIFEST, MAX_MANIFEST_BYTES, SIGNATURE, Manifest, Part, parse_manifest
from .trained_facts import ModelFile

Member = Part | ModelFile  # a part, or a file of the trained model

log = logging.getLogger(__name__)
BLOCK = 1024 * 1024
UNREADABLE = (tarfile.TarError, EOFError, OSError)  # a damaged or truncated tar, gzip stream or file
MAX_BYTES: int = SnapshotSettings.model_fields["snapshot_max_bytes"].default
_COMPRESSED = (b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00")  # gzip, bzip2, xz: what tarfile's "r|*" reads


@dataclass(frozen=True)
class Header:
    """The manifest as read, and whether a signature was checked."""

    manifest: Manifest
    digest: str  # sha256 of manifest.json's bytes
    signed: bool


@contextmanager
def _open(path: Path) -> Iterator[tarfile.TarFile]:
    try:
        with tarfile.open(path, "r|*") as tar:  # a stream: one forward pass, gzip or not
            yield tar
    except UNREADABLE as exc:
        if isinstance(exc, FileNotFoundError):
            raise SnapshotRefused(f"{path}: no such snapshot file") from exc
        raise SnapshotRefused(f"{path} is not a readable snapshot (a tar file): {exc}") from exc


def _small(tar: tarfile.TarFile, member: tarfile.TarInfo, limit: int) -> bytes:
    if not member.isreg() or member.size > limit:
        raise SnapshotRefused(f"the snapshot's {member.name} is not a file of at most {limit} bytes")
    fh = tar.extractfile(member)
    assert fh is not None
    return fh.read()


def plain_size(path: Path) -> int | None:
    """The size of an uncompressed snapshot file (its parts' bytes are in it as they are); None when compressed."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(6)
            return None if magic.startswith(_COMPRESSED) else fh.seek(0, 2)
    except OSError:
        return None  # _open says why


def check_declared(manifest: Manifest, size: int | None, max_bytes: int) -> None:
    """SnapshotRefused unless the sizes the parts (and the trained model's files) declare add up to at most
    `max_bytes` and, for an uncompressed file of `size` bytes, to no more than the file holds: checked before any
    part is read."""
    total = 0
    for part in manifest.members():
        if part.bytes < 0 or isinstance(part, Part) and part.rows < 0:
            raise SnapshotRefused(f"the snapshot's manifest is damaged: {part.member} declares a negative size")
        total += part.bytes
        if total > max_bytes:
            raise SnapshotRefused(
                f"the snapshot's {part.member} declares {part.bytes} bytes, which takes its parts past "
                f"{max_bytes} bytes (SECRAG_SNAPSHOT_MAX_BYTES); nothing of it was read",
                hint="raise SECRAG_SNAPSHOT_MAX_BYTES for a store this large, or check where the file came from",
            )
        if size is not None and total > size:
            raise SnapshotRefused(
                f"the snapshot's {part.member} declares {part.bytes} bytes; the whole file holds {size}: "
                "it is truncated or its manifest is false"
            )


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    for member in tar:
        if not member.isreg():
            raise SnapshotRefused(f"the snapshot holds {member.name!r}, which is not a regular file")
        yield member


def _header(
    tar: tarfile.TarFile, members: Iterator[tarfile.TarInfo], public_key: str | None, max_bytes: int, size: int | None
) -> tuple[Header, tarfile.TarInfo | None]:
    first = next(members, None)
    if first is None or first.name != MANIFEST:
        raise SnapshotRefused(f"the snapshot does not start with {MANIFEST}")
    data = _small(tar, first, MAX_MANIFEST_BYTES)
    manifest = parse_manifest(data)
    following = next(members, None)
    sig = None
    if following is not None and following.name == SIGNATURE:
        sig = _small(tar, following, 1024)
        following = next(members, None)
    if public_key:
        signature.verify(data, sig, public_key)
    elif sig is not None:
        log.warning("the snapshot is signed, but SECRAG_SNAPSHOT_PUBLIC_KEY is unset: its signature is not checked")
    check_declared(manifest, size, max_bytes)
    return Header(manifest, hashlib.sha256(data).hexdigest(), public_key is not None), following


def read_header(path: Path, public_key: str | None, max_bytes: int = MAX_BYTES) -> Header:
    """The snapshot's manifest, its signature checked against `public_key` when one is set, and the sizes its
    parts declare checked against `max_bytes` and the file (check_declared)."""
    with _open(path) as tar:
        return _header(tar, _members(tar), public_key, max_bytes, plain_size(path))[0]


def _parts(path: Path, header: Header) -> Iterator[tuple[Member, IO[bytes]]]:
    """Each part (then each file of the trained model) with a stream of its bytes, in the manifest's (load)
    order; SnapshotRefused for a member out of place, missing or unknown."""
    expected: list[Member] = list(header.manifest.members())
    size = plain_size(path)
    with _open(path) as tar:
        members = _members(tar)
        _, member = _header(tar, members, None, sum(p.bytes for p in expected), size)
        while member is not None:
            if not expected:
                raise SnapshotRefused(f"the snapshot holds {member.name!r}, which its manifest does not list")
            part = expected.pop(0)
            if member.name != part.member:
                raise SnapshotRefused(f"the snapshot holds {member.name!r} where its manifest lists {part.member!r}")
            if member.size != part.bytes:
                raise SnapshotRefused(
                    f"the snapshot's {part.member} is {member.size} bytes; its manifest says {part.bytes}: "
                    "the file is damaged"
                )
            if size is not None and member.offset_data + member.size > size:
                raise SnapshotRefused(
                    f"the snapshot's {part.member} declares {part.bytes} bytes from byte {member.offset_data}; the "
                    f"file ends at {size}: it is truncated"
                )
            fh = tar.extractfile(member)
            assert fh is not None
            yield part, fh
            member = next(members, None)
    if expected:
        raise SnapshotRefused(f"the snapshot lacks {', '.join(p.member for p in expected)}: the file is truncated")


def verify_parts(path: Path, header: Header) -> None:
    """Every part's sha256 checked against the manifest, streaming (SnapshotRefused naming the first that differs)."""
    for part, fh in _parts(path, header):
        digest = hashlib.sha256()
        try:
            for block in iter(lambda: fh.read(BLOCK), b""):  # noqa: B023 - read before the next part
                digest.update(block)
        except UNREADABLE as exc:
            raise SnapshotRefused(
                f"the snapshot's {part.member} cannot be read ({exc}): the file is truncated"
            ) from exc
        if digest.hexdigest() != part.sha256:
            raise SnapshotRefused(
                f"the snapshot's {part.member} does not match its checksum (sha256 {digest.hexdigest()[:16]}..., "
                f"the manifest says {part.sha256[:16]}...): the file is damaged or was changed",
                hint="download or copy the snapshot again",
            )
        log.info("snapshot: %s verified (%d bytes)", part.member, part.bytes)


def part_streams(path: Path, header: Header) -> Iterator[tuple[Member, IO[bytes]]]:
    """The parts to load and the model files to install, in order (after verify_parts)."""
    return _parts(path, header)
