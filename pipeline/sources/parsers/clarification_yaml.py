"""secrag's curated clarifications (pipeline/sources/bundled/clarifications): one record per correction of
a common forensic or detection misconception."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import YAML, Record, SourceFile, with_raw
from secrag.errors import ParseError
from secrag.files import safe_yaml

from .yaml_entry import compact, text, texts

_ID = re.compile(r"^CLAR-\d{3,}$")
_REQUIRED = ("id", "title", "misconception", "clarification")


def parse(file: SourceFile) -> Iterator[Record]:
    """Every entry of the file's `clarifications` list; a malformed entry fails the file, naming it."""
    doc = safe_yaml.load(file.text())
    entries = doc.get("clarifications") if isinstance(doc, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ParseError("expected a mapping with a non-empty `clarifications` list")
    seen: set[str] = set()
    for index, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise ParseError(f"clarification {index} is not a mapping")
        missing = [k for k in _REQUIRED if not text(entry.get(k))]
        if missing:
            raise ParseError(f"clarification {index} has no {', '.join(missing)}")
        cid = text(entry["id"])
        if not _ID.match(cid) or cid in seen:
            raise ParseError(f"clarification {index}: id {cid!r} is not a new CLAR-NNN id")
        seen.add(cid)
        yield with_raw(_record(file, entry, cid), entry, YAML)


def _record(file: SourceFile, entry: Mapping[str, Any], cid: str) -> Record:
    references = texts(normalize.as_list(entry.get("references")))
    techniques = normalize.technique_ids(texts(normalize.as_list(entry.get("techniques"))))
    return Record(
        source=file.source,
        upstream_id=cid,
        title=text(entry["title"]),
        body=normalize.join_text(
            f"Misconception: {text(entry['misconception'])}",
            f"Clarification: {text(entry['clarification'])}",
            "References:\n" + "\n".join(references) if references else "",
        ),
        url=file.url_for(),
        techniques=techniques,
        platforms=normalize.platforms(texts(normalize.as_list(entry.get("platforms")))),
        tags=normalize.tags(["clarification", *texts(normalize.as_list(entry.get("tags")))]),
        metadata=compact({"misconception": text(entry["misconception"]), "references": references}),
        path=file.rel,
    )
