"""HMAC-SHA256 signatures of webhook bodies, in GitHub's form (`sha256=<hex>`), checked in constant time."""

from __future__ import annotations

import hashlib
import hmac
from enum import Enum

PREFIX = "sha256="


class Verdict(Enum):
    SIGNED = "signed"
    UNSIGNED = "unsigned"
    FORGED = "forged"


def sign(secret: bytes, body: bytes) -> str:
    """The header value a sender with this secret puts on this body."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> Verdict:
    """Whether the header is this body's signature with this secret (a missing or empty header is unsigned)."""
    if not header:
        return Verdict.UNSIGNED
    if not header.startswith(PREFIX):
        return Verdict.FORGED
    return Verdict.SIGNED if hmac.compare_digest(sign(secret, body), header.strip()) else Verdict.FORGED
