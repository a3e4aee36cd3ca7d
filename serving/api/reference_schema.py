"""JSON Schema as reference markdown: a type in words, a field table, one model's section (serving/api/reference.py)."""

from __future__ import annotations

import json
import re
from typing import Any

REF = "#/components/schemas/"
_BOUNDS = (
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "length ≥ {}"),
    ("maxLength", "length ≤ {}"),
    ("minItems", "items ≥ {}"),
    ("maxItems", "items ≤ {}"),
)


def cell(text: object) -> str:
    """A table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def anchor(name: str) -> str:
    """The page's anchor of a heading holding only name (GitHub's rule: lower case, punctuation dropped)."""
    return re.sub(r"[^\w\- ]", "", name.lower()).replace(" ", "-")


def model_link(ref: str) -> str:
    name = ref.removeprefix(REF)
    return f"[`{name}`](#{anchor(name)})"


def _number(value: float) -> str:
    """A bound as written: 1 rather than 1.0."""
    return json.dumps(int(value) if isinstance(value, float) and value.is_integer() else value)


def bounds(schema: dict[str, Any]) -> list[str]:
    """The schema's limits in words (minimum, maxLength, ...), a pattern as `pattern`."""
    found = [text.format(_number(schema[key])) for key, text in _BOUNDS if key in schema]
    if "pattern" in schema:
        found.append("pattern")
    return found


def type_text(schema: dict[str, Any]) -> str:
    """A schema's type in words: a model as a link, arrays and maps by their items, unions with `or`."""
    if "$ref" in schema:
        return model_link(schema["$ref"])
    for union in ("anyOf", "oneOf", "allOf"):
        if union in schema:
            return " or ".join(dict.fromkeys(type_text(variant) for variant in schema[union]))
    if "enum" in schema:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    kind = schema.get("type", "any")
    if kind == "array":
        return f"array of {type_text(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {type_text(schema['additionalProperties'])}"
    limits = bounds(schema)
    text = "any" if isinstance(kind, list) else str(kind)
    return f"{text} ({', '.join(limits)})" if limits else text


def default_text(schema: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    return f"`{json.dumps(schema['default'])}`" if "default" in schema else ""


def field_rows(properties: dict[str, Any], required: list[str]) -> list[str]:
    """One table row per property: name, type, default (or required) and description, in declared order."""
    return [
        f"| `{name}` | {cell(type_text(schema))} | {cell(default_text(schema, name in required))} | "
        f"{cell(schema.get('description', ''))} |"
        for name, schema in properties.items()
    ]


def field_table(properties: dict[str, Any], required: list[str]) -> list[str]:
    if not properties:
        return ["No fields."]
    return ["| field | type | default | description |", "|---|---|---|---|", *field_rows(properties, required)]


def model_section(name: str, schema: dict[str, Any]) -> list[str]:
    """A component schema: its heading, description and fields (or its type, for a model that is not an object)."""
    lines = [f"### {name}", ""]
    if schema.get("description"):
        lines += [" ".join(schema["description"].split()), ""]
    if "properties" in schema:
        lines += field_table(schema["properties"], schema.get("required", []))
        if schema.get("additionalProperties") is False:
            lines += ["", "Other fields are refused (422)."]
    else:
        lines.append(f"Type: {type_text(schema)}.")
    return [*lines, ""]
