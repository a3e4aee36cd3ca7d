"""The STIX parser's driver: what it refuses before reading any object."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.records import SourceFile
from secrag.errors import ParseError


@pytest.mark.parametrize("data", [b"{", b"[1, 2]", b'{"type": "bundle", "objects": 3}'])
def test_malformed_bundle_raises(data: bytes) -> None:
    file = SourceFile(source="mitre_attack", root=Path("/x"), rel="a.json", data=data, options={"scheme": "attack"})
    with pytest.raises(ParseError):
        list(stix.parse(file))


def test_unknown_scheme_raises() -> None:
    file = SourceFile(
        source="x", root=Path("/x"), rel="a.json", data=b'{"type": "bundle", "objects": []}', options={"scheme": "nope"}
    )
    with pytest.raises(ParseError, match="unknown stix scheme"):
        list(stix.parse(file))
