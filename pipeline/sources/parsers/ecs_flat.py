"""The Elastic Common Schema in flat form (`generated/ecs/ecs_flat.yml`): one record per field set
(`process`, `user`, ...; top-level fields such as `@timestamp` and `message` are the `base` set), its
fields one line each under their dotted names, so that a field is found by its name and its set."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import YAML, Record, SourceFile, with_raw
from secrag.errors import ParseError

from .yaml_entry import compact, load_mapping, text

BASE = "base"
MAX_ALLOWED_VALUES = 30


def parse(file: SourceFile) -> Iterator[Record]:
    """One record per ECS field set, in the order of the sets' names."""
    doc = load_mapping(file)
    by_set: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for flat_name, field in doc.items():
        if not isinstance(field, Mapping):
            raise ParseError(f"ECS field {str(flat_name)[:80]!r} is not a mapping")
        name = text(field.get("flat_name")) or str(flat_name)
        by_set.setdefault(name.split(".", 1)[0] if "." in name else BASE, []).append((name, field))
    if not by_set:
        raise ParseError("no ECS fields in the file")
    docs_url = str(file.options.get("docs_url", ""))
    for fieldset in sorted(by_set):
        fields = sorted(by_set[fieldset], key=lambda item: item[0])
        levels = sorted({text(f.get("level")) for _, f in fields if text(f.get("level"))})
        record = Record(
            source=file.source,
            upstream_id=fieldset,
            title=f"ECS {fieldset} fields",
            body=normalize.join_text(
                f"Elastic Common Schema field set {fieldset}: {len(fields)} fields"
                + (f" ({', '.join(levels)})." if levels else "."),
                "Fields:\n" + "\n".join(_field_line(name, f) for name, f in fields),
            ),
            url=docs_url.format(fieldset=fieldset) if docs_url else file.url_for(),
            tags=normalize.tags(["ecs", fieldset]),
            metadata=compact({"fieldset": fieldset, "fields": len(fields), "levels": levels}),
            path=file.rel,
            identifiers=tuple(name for name, _ in fields),
        )
        yield with_raw(record, {name: dict(f) for name, f in fields}, YAML)  # the set's entries of the flat file


def _field_line(name: str, field: Mapping[str, Any]) -> str:
    """`- process.command_line (wildcard, extended): Full command line ... Example: ...`"""
    kind = ", ".join(t for t in (text(field.get("type")), text(field.get("level"))) if t)
    line = f"- {name}" + (f" ({kind})" if kind else "")
    summary = text(field.get("short")) or text(field.get("description")).split("\n", 1)[0]
    if summary:
        line += f": {summary}"
    example = text(field.get("example"))
    if example:
        line += f" Example: {example[:200]}"
    allowed = [text(v.get("name")) for v in normalize.as_list(field.get("allowed_values")) if isinstance(v, Mapping)]
    allowed = [a for a in allowed if a]
    if allowed:
        more = f" (+{len(allowed) - MAX_ALLOWED_VALUES} more)" if len(allowed) > MAX_ALLOWED_VALUES else ""
        line += f" Allowed values: {', '.join(allowed[:MAX_ALLOWED_VALUES])}{more}."
    return line
