"""What each identifier kind looks like (ATT&CK, CVE, CAPEC, ATLAS, D3FEND, MBC, rule UUIDs, file hashes): the
one place the enrichment, the query classifier, the parsers and the artefact lookups take these shapes from."""

from __future__ import annotations

import re

TECHNIQUE = r"T\d{4}"
SUB_TECHNIQUE = rf"{TECHNIQUE}\.\d{{3}}"
CVE = r"CVE-\d{4}-\d{4,}"
CAPEC = r"CAPEC-\d+"
ATLAS = r"AML\.[A-Z]+\d{4}(?:\.\d{3})?"
# D3FEND techniques are D3-..., its digital artifacts D3A-... (both carry a d3fend-id).
D3FEND = r"D3[A-Z]?-[A-Z0-9]+"
# MBC behaviours and micro-behaviours (B0001, C0002.001, E1055) share ATT&CK's shape with other letters.
MBC = r"[A-Z]{1,3}\d{4}(?:\.\d{3})?"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# File hashes by their hex length (LOLDrivers and HijackLibs write them in either case).
HASH_LENGTHS = {32: "md5", 40: "sha1", 64: "sha256"}
HASH = r"[0-9A-Fa-f]{32}(?:[0-9A-Fa-f]{8})?(?:[0-9A-Fa-f]{24})?"

# Whole-query shapes, most specific first; people type them in any case.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(shape, re.IGNORECASE))
    for kind, shape in (
        ("sub_technique", SUB_TECHNIQUE),
        ("technique", TECHNIQUE),
        ("cve", CVE),
        ("capec", CAPEC),
        ("atlas", ATLAS),
        ("d3fend", D3FEND),
        ("uuid", UUID),
    )
)

_TECHNIQUE_ID = re.compile(rf"{TECHNIQUE}(?:\.\d{{3}})?")
_CVE_ID = re.compile(CVE, re.IGNORECASE)


def is_technique_id(text: str) -> bool:
    """`T1003` or `T1003.001`, exactly (upper case, as ATT&CK writes them)."""
    return _TECHNIQUE_ID.fullmatch(text) is not None


def is_cve_id(text: str) -> bool:
    """`CVE-2021-44228`, exactly (any case)."""
    return _CVE_ID.fullmatch(text) is not None


_HASH = re.compile(HASH)


def hash_algorithm(text: str) -> str | None:
    """`md5`, `sha1` or `sha256` for a hex digest of that length (any case, surrounding space ignored)."""
    value = text.strip()
    return HASH_LENGTHS.get(len(value)) if _HASH.fullmatch(value) else None
