"""Reading a snapshot file without a database: the manifest first, the signature checked against the operator's
key, every part's size and sha256, and a file out of shape refused with a sentence saying how."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from pipeline.snapshot.manifest import MANIFEST, SIGNATURE, Manifest, ModelFacts, Part, SourceFacts, parse_manifest
from pipeline.snapshot.parts import PART_TABLES, Column
from pipeline.snapshot.reading import part_streams, read_header, verify_parts
from pipeline.snapshot.signature import public_key_text, sign
from secrag.errors import SnapshotRefused


def manifest_of(parts: dict[str, bytes]) -> Manifest:
    return Manifest(
        schema_version=26,
        model=ModelFacts("all-MiniLM-L6-v2", "0123456789ab", 384),
        sources=(SourceFacts("sigma", "abc", 2, 3),),
        parts=tuple(
            Part(t, f"parts/{t}.copy", (Column("name", "text"),), 1, len(d), hashlib.sha256(d).hexdigest())
            for t, d in parts.items()
        ),
        created_at="2026-11-27T00:00:00+00:00",
        secrag_version="0",
        server_version=170000,
    )


PARTS = {t: f"rows of {t}".encode() * 50 for t in PART_TABLES}


def write(path: Path, members: list[tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def snapshot(path: Path, parts: dict[str, bytes] = PARTS, signature: bytes | None = None) -> Path:
    head = [(MANIFEST, manifest_of(parts).to_bytes())] + ([(SIGNATURE, signature)] if signature else [])
    return write(path, head + [(f"parts/{t}.copy", d) for t, d in parts.items()])


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    pem = ed25519.Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    return path


def test_a_whole_snapshot_reads_and_verifies(tmp_path: Path) -> None:
    path = snapshot(tmp_path / "s.tar")
    header = read_header(path, None)
    assert header.manifest == manifest_of(PARTS) and not header.signed
    verify_parts(path, header)
    assert [(p.table, fh.read()) for p, fh in part_streams(path, header)] == list(PARTS.items())


def test_the_manifest_round_trips_through_its_bytes() -> None:
    manifest = manifest_of(PARTS)
    assert parse_manifest(manifest.to_bytes()) == manifest


@pytest.mark.parametrize(
    ("table", "problem"),
    [("chunks", "does not match its checksum"), ("embeddings", "does not match its checksum")],
)
def test_a_changed_byte_in_a_part_is_refused(tmp_path: Path, table: str, problem: str) -> None:
    path = snapshot(tmp_path / "s.tar")
    changed = bytearray(path.read_bytes())
    with tarfile.open(path) as tar:
        member = tar.getmember(f"parts/{table}.copy")
    changed[member.offset_data + 7] ^= 0x20
    path.write_bytes(bytes(changed))
    with pytest.raises(SnapshotRefused, match=f"parts/{table}.copy {problem}"):
        verify_parts(path, read_header(path, None))


def test_a_missing_part_is_refused(tmp_path: Path) -> None:
    head = [(MANIFEST, manifest_of(PARTS).to_bytes())]
    path = write(tmp_path / "s.tar", head + [(f"parts/{t}.copy", d) for t, d in list(PARTS.items())[:-1]])
    with pytest.raises(SnapshotRefused, match="lacks parts/embeddings.copy"):
        verify_parts(path, read_header(path, None))


def test_an_unlisted_member_is_refused(tmp_path: Path) -> None:
    head = [(MANIFEST, manifest_of(PARTS).to_bytes())]
    path = write(
        tmp_path / "s.tar", head + [("parts/extra.copy", b"x")] + [(f"parts/{t}.copy", d) for t, d in PARTS.items()]
    )
    with pytest.raises(SnapshotRefused, match="holds 'parts/extra.copy' where its manifest lists"):
        verify_parts(path, read_header(path, None))


def test_a_file_that_is_no_snapshot_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.tar"
    path.write_bytes(b"not a tar at all" * 100)
    with pytest.raises(SnapshotRefused, match="not a readable snapshot"):
        read_header(path, None)
    with pytest.raises(SnapshotRefused, match="does not start with manifest.json"):
        read_header(write(tmp_path / "t.tar", [("parts/sources.copy", b"x")]), None)
    with pytest.raises(SnapshotRefused, match="no such snapshot file"):
        read_header(tmp_path / "absent.tar", None)


def test_another_format_is_refused() -> None:
    with pytest.raises(SnapshotRefused, match="format is 'secrag-snapshot/9'"):
        parse_manifest(manifest_of(PARTS).to_bytes().replace(b"secrag-snapshot/1", b"secrag-snapshot/9"))


def test_a_signed_snapshot_is_checked_against_the_configured_key(tmp_path: Path, key: Path) -> None:
    signature = sign(manifest_of(PARTS).to_bytes(), key)
    path = snapshot(tmp_path / "s.tar", signature=signature)
    header = read_header(path, public_key_text(key))
    assert header.signed
    verify_parts(path, header)  # the signature is not a part
    assert len(base64.b64decode(public_key_text(key))) == 32


def test_another_key_or_no_signature_is_refused_when_a_key_is_configured(tmp_path: Path, key: Path) -> None:
    other = tmp_path / "other.pem"
    other.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    signed_by_other = snapshot(tmp_path / "a.tar", signature=sign(manifest_of(PARTS).to_bytes(), other))
    with pytest.raises(SnapshotRefused, match="signature does not match SECRAG_SNAPSHOT_PUBLIC_KEY"):
        read_header(signed_by_other, public_key_text(key))
    unsigned = snapshot(tmp_path / "b.tar")
    with pytest.raises(SnapshotRefused, match="not signed"):
        read_header(unsigned, public_key_text(key))
    assert read_header(signed_by_other, None).manifest == manifest_of(PARTS)  # no key: not checked


def test_a_changed_manifest_breaks_its_signature(tmp_path: Path, key: Path) -> None:
    signature = sign(manifest_of(PARTS).to_bytes(), key)
    changed = manifest_of(PARTS).to_bytes().replace(b'"schema_version":26', b'"schema_version":27')
    path = write(tmp_path / "s.tar", [(MANIFEST, changed), (SIGNATURE, signature)])
    with pytest.raises(SnapshotRefused, match="signature does not match"):
        read_header(path, public_key_text(key))


def lying(path: Path, table: str, size: int, compress: bool = False) -> Path:
    """A snapshot whose manifest and tar header both say the part of `table` is `size` bytes; the file holds
    only its real bytes (a crafted file: its checksum is never reached)."""
    manifest = manifest_of(PARTS)
    parts = tuple(
        p if p.table != table else Part(p.table, p.member, p.columns, p.rows, size, p.sha256) for p in manifest.parts
    )
    data = Manifest(**{**manifest.__dict__, "parts": parts}).to_bytes()
    raw = b""
    for name, body, declared in [(MANIFEST, data, len(data))] + [
        (f"parts/{t}.copy", d, size if t == table else len(d)) for t, d in PARTS.items()
    ]:
        info = tarfile.TarInfo(name)
        info.size = declared
        raw += info.tobuf(format=tarfile.DEFAULT_FORMAT) + body + b"\0" * (-len(body) % tarfile.BLOCKSIZE)
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def test_a_huge_declared_size_is_refused_before_any_part_is_read(tmp_path: Path) -> None:
    for compress in (False, True):
        path = lying(tmp_path / f"huge-{compress}.tar", "chunks", 2**50, compress)
        with pytest.raises(
            SnapshotRefused, match=rf"parts/chunks\.copy declares {2**50} bytes, which takes its parts past"
        ):
            read_header(path, None)
    bounded = lying(tmp_path / "bounded.tar", "chunks", len(PARTS["chunks"]))
    with pytest.raises(SnapshotRefused, match="past 4096 bytes"):  # the real size, under a smaller bound
        read_header(bounded, None, max_bytes=4096)


def test_a_declared_size_past_the_file_is_refused_before_any_part_is_read(tmp_path: Path) -> None:
    path = lying(tmp_path / "past.tar", "chunks", 10 * 2**20)
    with pytest.raises(SnapshotRefused, match=r"parts/chunks\.copy declares 10485760 bytes; the whole file holds \d+"):
        read_header(path, None)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"created_at": "2026-11-27T00:00:00"}, "created_at '2026-11-27T00:00:00' is not a time with its offset"),
        ({"created_at": "yesterday"}, "created_at 'yesterday' is not a time with its offset"),
    ],
)
def test_a_manifest_without_a_creation_time_is_refused(change: dict[str, str], problem: str) -> None:
    raw = {**json.loads(manifest_of(PARTS).to_bytes()), **change}
    with pytest.raises(SnapshotRefused, match=problem):
        parse_manifest(json.dumps(raw).encode())
