"""Text enrichment applied identically at index and query time: ATT&CK names, identifier variants."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from secrag import identifiers as ids

# In running text: not inside a longer word or an ATLAS id; `T1003/001` (ATT&CK URLs) counts as well.
_TECHNIQUE = re.compile(rf"(?<![A-Za-z0-9])(?<!AML\.)({ids.TECHNIQUE})(?:[./](\d{{3}}))?(?![0-9])", re.IGNORECASE)
_FILE_WITH_EXT = re.compile(
    r"(?<![\w.-])([A-Za-z0-9_][\w-]*(?:\.[\w-]+)*)\.(exe|dll|sys|ps1|psm1|bat|cmd|vbs|vbe|js|jse|hta|msi|cpl|"
    r"scr|com|lnk|sh|py|so|dylib|plist|inf|wsf|xll|ocx|drv|efi)\b",
    re.IGNORECASE,
)
_CVE = re.compile(rf"\b{ids.CVE}\b", re.IGNORECASE)
_CAPEC = re.compile(rf"\b{ids.CAPEC}\b", re.IGNORECASE)
# Upper case only in running text: lower-case look-alikes are words, not ids.
_DOTTED_ID = re.compile(rf"\b(?:{ids.ATLAS}|{ids.D3FEND}|{ids.MBC})\b")
_UUID = re.compile(rf"\b{ids.UUID}\b", re.IGNORECASE)


def technique_mentions(text: str) -> list[str]:
    """ATT&CK ids mentioned in the text, normalised, in first-seen order."""
    seen: dict[str, None] = {}
    for major, minor in _TECHNIQUE.findall(text):
        tid = f"{major.upper()}.{minor}" if minor else major.upper()
        seen.setdefault(tid, None)
    return list(seen)


def technique_names(ids: Iterable[str], lookup: Mapping[str, str]) -> list[str]:
    """`T1003 OS Credential Dumping` for every id the lookup knows (unknown ids are left out)."""
    return [f"{tid} {lookup[tid]}" for tid in ids if tid in lookup]


def enrich(text: str, lookup: Mapping[str, str], extra_techniques: Iterable[str] = ()) -> str:
    """The text with the names of the ATT&CK techniques it mentions (or is tagged with) appended.

    `lookup` maps technique id to its full name ("OS Credential Dumping: LSASS Memory").
    """
    ids = list(dict.fromkeys([*technique_mentions(text), *extra_techniques]))
    names = technique_names(ids, lookup)
    if not names:
        return text
    return f"{text}\n\n" + "; ".join(names)


def identifier_variants(text: str) -> list[str]:
    """Identifier forms that keyword search must find: parents of sub-techniques, file stems, CVE parts.

    `T1059.001` also yields `T1059`; `mimikatz.exe` also yields `mimikatz`; `CVE-2021-44228` also
    yields `2021-44228`; ATLAS, D3FEND, MBC ids, CAPEC ids and UUIDs are kept whole. Sorted, unique,
    lower-case.
    """
    out: set[str] = set()
    for major, minor in _TECHNIQUE.findall(text):
        out.add(major.lower())
        if minor:
            out.add(f"{major}.{minor}".lower())
    for stem, ext in _FILE_WITH_EXT.findall(text):
        out.add(f"{stem}.{ext}".lower())
        out.add(stem.lower())
    for cve in _CVE.findall(text):
        _prefix, year, number = cve.lower().split("-")
        out.add(f"cve-{year}-{number}")
        out.add(f"{year}-{number}")
    for capec in _CAPEC.findall(text):
        out.add(capec.lower())
    for ident in _DOTTED_ID.findall(text):
        out.add(ident.lower())
    for uid in _UUID.findall(text):
        out.add(uid.lower())
    return sorted(out)
