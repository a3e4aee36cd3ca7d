"""Artefact identifiers (file hashes, Windows and Unix file names, Windows paths) normalised for exact lookup:
the form the pipeline stores at publish (`document_artefacts`, migration 0022) and the forms a looked-up
value is tried in, so that both sides normalise alike."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from secrag.identifiers import hash_algorithm

Kind = Literal["md5", "sha1", "sha256", "authentihash", "imphash", "rich_header_hash", "file_name", "path"]
KINDS: tuple[str, ...] = get_args(Kind)
HASH_KINDS = frozenset(KINDS[:6])
MAX_VALUE_CHARS = 1000  # longer upstream values are not identifiers (and longer lookups find nothing)

# Windows roots as LOLBAS (c:\windows\system32, C:\Users\<username>\AppData\Local), HijackLibs (%SYSTEM32%,
# %LOCALAPPDATA%) and drivers (\SystemRoot\System32) write them, each to one canonical variable. Most specific
# first; matched on the lower-cased path, up to a separator or the end. HijackLibs' %PROGRAMFILES% stands for
# both program folders, so both are one root here.
_USER = r"(?:c:\\users\\[^\\]+|%userprofile%)"
_WINDIR = r"(?:c:\\windows|%windir%|%systemroot%|\\systemroot)"
_ROOTS = tuple(
    (re.compile(rf"^(?:{pattern})(?=\\|$)"), root)
    for pattern, root in (
        (rf"{_WINDIR}\\system32|%system32%", "%system32%"),
        (rf"{_WINDIR}\\syswow64|%syswow64%", "%syswow64%"),
        (_WINDIR, "%windir%"),
        (
            r"c:\\program files \(x86\)|c:\\program files|%programfiles\(x86\)%|%programfiles%|%programw6432%",
            "%programfiles%",
        ),
        (r"c:\\programdata|%programdata%|%allusersprofile%", "%programdata%"),
        (rf"{_USER}\\appdata\\local|%localappdata%", "%localappdata%"),
        (rf"{_USER}\\appdata\\roaming|%appdata%", "%appdata%"),
        (_USER, "%userprofile%"),
    )
)
_DEVICE_PREFIX = re.compile(r"^(?:\\\\\?\\|\\\?\?\\)")  # \\?\C:\... and \??\C:\...
# What stands for a varying part of a path: HijackLibs' %VERSION%, LOLBAS's <version>.
_PLACEHOLDER = re.compile(r"%version%|<[^<>\\]{1,40}>")
_SEPARATORS = re.compile(r"[\\/]+")
# A query that may name a file: one token whose last part has an extension with a letter (certutil.exe,
# ld.so, C:\Windows\System32\version.dll), not T1003.001 or 1.2. Anchored: a search from every position of a
# long token would be quadratic (tests/unit/test_caller_patterns.py).
_FILE_NAME = re.compile(r"\A[^\s\\/]*[^\s\\/.]\.[A-Za-z0-9]{0,3}[A-Za-z][A-Za-z0-9]{0,3}")


@dataclass(frozen=True)
class Artefact:
    """One identifier a record holds: its kind, the upstream field it is in and its value as written there,
    with the key it is matched by."""

    kind: Kind
    field: str
    value: str
    key: str
    folded: bool  # matched case-insensitively (hashes, Windows names and paths); else exactly (Unix names)
    pattern: str | None = None  # for a path with placeholders: an anchored regex over looked-up paths


@dataclass(frozen=True)
class Probe:
    """One form a looked-up value is tried in: a key, whether it is the folded form, and whether it is a path
    (also tried against the stored path patterns)."""

    key: str
    folded: bool
    path: bool = False


def _clean(value: object) -> str:
    text = str(value).strip().strip("'\"").strip() if value is not None else ""
    return text if 0 < len(text) <= MAX_VALUE_CHARS and "\n" not in text and "\x00" not in text else ""


def file_hash(field: str, value: object, kind: Kind | None = None) -> Artefact | None:
    """A hex digest (MD5, SHA-1, SHA-256) as `kind` (default: its algorithm); None for anything else."""
    text = _clean(value)
    algorithm = hash_algorithm(text) if text else None
    if algorithm is None:
        return None
    chosen: Kind = kind or algorithm  # type: ignore[assignment]
    return Artefact(chosen, field, text, text.lower(), True)


def windows_name(field: str, value: object) -> Artefact | None:
    """A Windows file name (a path's last part), matched case-insensitively."""
    text = _clean(value)
    name = _SEPARATORS.split(text.rstrip("\\/"))[-1] if text else ""
    return Artefact("file_name", field, text, name.lower(), True) if name else None


def unix_name(field: str, value: object) -> Artefact | None:
    """A Unix file name, matched exactly (Unix names are case-sensitive)."""
    text = _clean(value)
    return Artefact("file_name", field, text, text, False) if text else None


def windows_path(field: str, value: object) -> Artefact | None:
    """A Windows path in its canonical form (`normal_path`); a path with placeholders also gets a pattern."""
    text = _clean(value)
    if not text:
        return None
    key = normal_path(text)
    return Artefact("path", field, text, key, True, _pattern(key))


def normal_path(text: str) -> str:
    """Lower case, backslashes (one between parts, none at the end), no quotes or device prefix, and the
    system roots as one variable each: C:\\Windows\\System32\\certutil.exe, c:/windows/system32/CERTUTIL.EXE
    and %SYSTEM32%\\certutil.exe are all %system32%\\certutil.exe."""
    path = _DEVICE_PREFIX.sub("", text.strip().strip("'\"").strip())
    path = _SEPARATORS.sub(r"\\", path.replace("/", "\\")).lower()
    if len(path) > 1:
        path = path.rstrip("\\")
    for pattern, root in _ROOTS:
        match = pattern.match(path)
        if match:
            return root + path[match.end() :]
    return path


def _pattern(key: str) -> str | None:
    """`^...$` with each placeholder as `[^\\]*` (one part of a path or less), for PostgreSQL's `~`."""
    parts = _PLACEHOLDER.split(key)
    if len(parts) == 1:
        return None
    return "^" + r"[^\\]*".join(_regex_escape(p) for p in parts) + "$"


def _regex_escape(text: str) -> str:
    # A backslash before a character that is not a letter or digit makes it literal in PostgreSQL's
    # regular expressions (and in Python's); letters and digits are never escaped.
    return "".join(ch if ch.isalnum() or ch == " " else "\\" + ch for ch in text)


def probes(value: str) -> list[Probe]:
    """The forms a looked-up value is tried in: a hash in lower case; anything else as written (Unix names)
    and in lower case (Windows names); a value with a separator or a leading variable also as a canonical
    Windows path and by its last part, a file name."""
    text = value.strip()
    if not text or len(text) > MAX_VALUE_CHARS:
        return []
    if hash_algorithm(text):
        return [Probe(text.lower(), True)]
    found = [Probe(text, False), Probe(text.lower(), True)]
    if "\\" in text or "/" in text or text.startswith("%"):
        found.append(Probe(normal_path(text), True, path=True))
        name = _SEPARATORS.split(text.rstrip("\\/"))[-1]
        if name:
            found += [Probe(name, False), Probe(name.lower(), True)]
    return list(dict.fromkeys(found))


def names_an_artefact(query: str) -> bool:
    """Whether a search query may be an artefact: a file hash, or one token ending in a file name. Cheap
    (regular expressions only), so the other queries pay nothing for the lookup."""
    text = query.strip()
    if hash_algorithm(text):
        return True
    if not text or len(text) > 260 or any(ch.isspace() for ch in text):
        return False
    return _FILE_NAME.fullmatch(_SEPARATORS.split(text)[-1]) is not None


def unique(found: Iterable[Artefact | None]) -> tuple[Artefact, ...]:
    """The artefacts found, without None and repeats (a name in several samples is one row), in order."""
    seen: dict[tuple[str, str, str], Artefact] = {}
    for item in found:
        if item is not None:
            seen.setdefault((item.kind, item.field, item.key), item)
    return tuple(seen.values())
