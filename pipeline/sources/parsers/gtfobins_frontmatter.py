"""GTFOBins entries: one Unix binary's abusable functions, from its YAML front matter."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import PurePosixPath
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import Record, SourceFile
from secrag import artefacts
from secrag.errors import ParseError
from secrag.files import safe_yaml

from .yaml_entry import compact, text, texts, web_url

# Jekyll front matter: `---` then YAML up to a closing `---` (older pages) or `...` (current files).
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*$", re.DOTALL | re.MULTILINE)
# Per-example keys shown as `key: value` next to the contexts (e.g. `listener: tcp-server`).
_DETAIL_KEYS = ("from", "binary", "sender", "receiver", "listener", "connector", "blind", "tty")


def parse(file: SourceFile) -> Iterator[Record]:
    """The one GTFOBins entry of a file; alias stubs become short pointer records."""
    doc = _front_matter(file)
    name = PurePosixPath(file.rel).name
    if doc.get("alias"):
        yield _alias_record(file, name, text(doc["alias"]))
        return
    functions = doc.get("functions")
    if not isinstance(functions, dict) or not functions:
        raise ParseError("GTFOBins entry has neither functions nor alias")
    sections = []
    contexts: set[str] = set()
    for function, examples in functions.items():
        for example in normalize.as_list(examples):
            if not isinstance(example, dict):
                raise ParseError(f"function {function!r} holds a non-mapping example")
            contexts.update(str(c) for c in (example.get("contexts") or {}))
            sections.append(_example(str(function), example))
    function_names = sorted(str(f) for f in functions)
    yield Record(
        source=file.source,
        upstream_id=file.rel,
        title=name,
        body=normalize.join_text(
            f"{name}: Unix binary that can be abused for {', '.join(function_names)} (GTFOBins).",
            text(doc.get("comment")),
            *sections,
        ),
        url=web_url(file),
        platforms=normalize.platforms(file.options.get("platforms", ["linux", "unix"])),
        tags=normalize.tags([*function_names, *contexts]),
        artefacts=artefacts.unique([artefacts.unix_name("name", name)]),
        metadata=compact(
            {
                "functions": function_names,
                "contexts": sorted(contexts),
                "examples": len(sections),
                "comment": text(doc.get("comment")),
            }
        ),
        path=file.rel,
    )


def _front_matter(file: SourceFile) -> dict[str, Any]:
    try:
        raw = file.text()
    except UnicodeDecodeError as exc:
        raise ParseError(f"not UTF-8 text: {exc.reason}") from exc
    match = _FRONT_MATTER.match(raw)
    if match is None:
        raise ParseError("no YAML front matter between `---` lines")
    doc = safe_yaml.load(match.group(1))
    if not isinstance(doc, dict):
        raise ParseError(f"front matter is not a mapping but {type(doc).__name__}")
    return doc


def _alias_record(file: SourceFile, name: str, target: str) -> Record:
    """Kept as a record so a search for the alias name still leads to the real entry."""
    return Record(
        source=file.source,
        upstream_id=file.rel,
        title=name,
        body=f"{name} is an alias of {target} in GTFOBins: the functions of {target} apply to {name}.",
        url=web_url(file),
        platforms=normalize.platforms(file.options.get("platforms", ["linux", "unix"])),
        tags=("alias",),
        metadata={"alias_of": target},
        path=file.rel,
        artefacts=artefacts.unique([artefacts.unix_name("name", name)]),
    )


def _example(function: str, example: Mapping[str, Any]) -> str:
    contexts = example.get("contexts") or {}
    labels = [_context_label(str(k), v) for k, v in contexts.items()]
    details = [f"{k}: {text(example[k])}" for k in _DETAIL_KEYS if example.get(k) not in (None, "")]
    lines = [f"Function {function} [{', '.join(labels)}]" + (f" ({'; '.join(details)})" if details else "")]
    lines += texts([example.get("comment"), example.get("version")])
    lines.append(text(example.get("code")))
    for context, value in contexts.items():
        if isinstance(value, dict):
            lines += texts([value.get("comment")])
            if value.get("code"):
                lines.append(f"In the {context} context:\n{text(value['code'])}")
    return "\n".join(lines)


def _context_label(context: str, value: object) -> str:
    """`suid (shell)`, `capabilities (CAP_SETUID)` or the bare context name."""
    if not isinstance(value, dict):
        return context
    notes = texts(normalize.as_list(value.get("list")))
    if value.get("shell"):
        notes.append("shell")
    return f"{context} ({', '.join(notes)})" if notes else context
