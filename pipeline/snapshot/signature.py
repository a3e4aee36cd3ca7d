"""Signing a snapshot's manifest with an ed25519 key, and checking it against the operator's public key
(SECRAG_SNAPSHOT_PUBLIC_KEY); both need the `cryptography` package, imported only when a key is used."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from types import ModuleType

from secrag.errors import ConfigError, SnapshotRefused


def _ed25519() -> ModuleType:
    try:
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError as exc:
        raise ConfigError(
            "signing or checking a snapshot's signature needs the cryptography package",
            hint="pip install cryptography (or leave SECRAG_SNAPSHOT_PUBLIC_KEY unset)",
        ) from exc
    return ed25519


def sign(manifest: bytes, private_key_pem: Path) -> bytes:
    """The ed25519 signature (64 bytes) of the manifest with the PEM private key in the file."""
    from cryptography.hazmat.primitives import serialization

    ed25519 = _ed25519()
    try:
        key = serialization.load_pem_private_key(private_key_pem.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"{private_key_pem}: not a readable unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise ConfigError(f"{private_key_pem}: not an ed25519 private key")
    signature: bytes = key.sign(manifest)
    return signature


def public_key_text(private_key_pem: Path) -> str:
    """The base64 public key of a PEM private key: the value of SECRAG_SNAPSHOT_PUBLIC_KEY that trusts it."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(private_key_pem.read_bytes(), password=None)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64encode(raw).decode()


def verify(manifest: bytes, signature: bytes | None, public_key: str) -> None:
    """SnapshotRefused unless `signature` is the key's signature of the manifest."""
    from cryptography.exceptions import InvalidSignature

    ed25519 = _ed25519()
    if signature is None:
        raise SnapshotRefused(
            "the snapshot is not signed, and SECRAG_SNAPSHOT_PUBLIC_KEY requires a signature",
            hint="export it with --sign-key, or unset SECRAG_SNAPSHOT_PUBLIC_KEY to accept unsigned snapshots",
        )
    try:
        key = ed25519.Ed25519PublicKey.from_public_bytes(base64.b64decode(public_key, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(f"SECRAG_SNAPSHOT_PUBLIC_KEY is not a base64 ed25519 public key: {exc}") from exc
    try:
        key.verify(signature, manifest)
    except InvalidSignature:
        raise SnapshotRefused(
            "the snapshot's signature does not match SECRAG_SNAPSHOT_PUBLIC_KEY: it was signed by another key, "
            "or its manifest was changed"
        ) from None
