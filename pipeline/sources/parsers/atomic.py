"""Atomic Red Team technique files: one record per entry of `atomic_tests`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pipeline.sources import normalize
from pipeline.sources.records import YAML, Record, SourceFile, with_raw
from secrag.errors import ParseError
from secrag.files import safe_yaml

# Atomic platform names outside the shared vocabulary (`iaas:aws` names both parts).
_PLATFORM_ALIASES = {
    "azure-ad": "entra_id",
    "office-365": "office365",
    "google-workspace": "google_workspace",
}


def parse(file: SourceFile) -> Iterator[Record]:
    """Every atomic test of one `atomics/T*/T*.yaml` file."""
    doc = safe_yaml.load(file.text())
    if not isinstance(doc, dict):
        raise ParseError("technique file is not a mapping")
    technique = normalize.technique_ids(normalize.as_list(doc.get("attack_technique")))
    if not technique:
        raise ParseError("no attack_technique")
    tests = doc.get("atomic_tests")
    if not isinstance(tests, list):
        raise ParseError("atomic_tests is not a list")
    display_name = str(doc.get("display_name") or "").strip()
    for index, test in enumerate(tests):
        if not isinstance(test, dict) or not test.get("name"):
            raise ParseError(f"atomic test {index + 1} is not a mapping with a name")
        guid = str(test.get("auto_generated_guid") or "").strip()
        if not guid:
            raise ParseError(f"atomic test {test['name']!r} has no auto_generated_guid")
        yield with_raw(_record(file, test, guid, technique, display_name), test, YAML)  # one test of the file


def _record(
    file: SourceFile, test: Mapping[str, Any], guid: str, technique: tuple[str, ...], display_name: str
) -> Record:
    executor = normalize.as_mapping(test.get("executor"))
    supported = [str(p) for p in normalize.as_list(test.get("supported_platforms"))]
    return Record(
        source=file.source,
        upstream_id=guid,
        title=str(test["name"]).strip(),
        body=normalize.join_text(
            f"Technique: {', '.join(technique)} {display_name}".rstrip(),
            f"Description: {test['description']}" if test.get("description") else "",
            "Supported platforms: " + ", ".join(supported) if supported else "",
            _executor_text(executor),
            _arguments_text(test.get("input_arguments")),
            _dependencies_text(test.get("dependencies")),
        ),
        url=file.url_for(),
        techniques=technique,
        platforms=normalize.platforms(_platform_names(supported)),
        tags=normalize.tags([executor.get("name")]),
        metadata={
            k: v
            for k, v in {
                "technique_name": display_name,
                "executor": executor.get("name"),
                "elevation_required": bool(executor.get("elevation_required")),
                "supported_platforms": supported,
                "input_arguments": sorted(str(k) for k in (test.get("input_arguments") or {})),
                "dependency_executor": test.get("dependency_executor_name"),
            }.items()
            if v not in (None, "", [])
        },
        path=file.rel,
    )


def _platform_names(supported: list[str]) -> list[str]:
    names = []
    for value in supported:
        for part in value.lower().split(":"):
            names.append(_PLATFORM_ALIASES.get(part, part))
    return names


def _executor_text(executor: Mapping[str, Any]) -> str:
    """The commands exactly as upstream writes them, `#{arg}` placeholders included."""
    name = executor.get("name") or "unknown"
    elevated = " (elevation required)" if executor.get("elevation_required") else ""
    return normalize.join_text(
        f"Executor: {name}{elevated}",
        f"Command:\n{str(executor['command']).strip()}" if executor.get("command") else "",
        f"Steps:\n{str(executor['steps']).strip()}" if executor.get("steps") else "",
        f"Cleanup:\n{str(executor['cleanup_command']).strip()}" if executor.get("cleanup_command") else "",
    )


def _arguments_text(arguments: object) -> str:
    if not isinstance(arguments, dict) or not arguments:
        return ""
    lines = []
    for name, spec in arguments.items():
        spec = spec if isinstance(spec, dict) else {}
        kind = f" ({spec['type']})" if spec.get("type") else ""
        desc = f": {str(spec['description']).strip()}" if spec.get("description") else ""
        default = f" [default: {spec['default']}]" if spec.get("default") is not None else ""
        lines.append(f"- {name}{kind}{desc}{default}")
    return "Input arguments:\n" + "\n".join(lines)


def _dependencies_text(dependencies: object) -> str:
    descriptions = [
        str(d.get("description")).strip()
        for d in normalize.as_list(dependencies)
        if isinstance(d, dict) and d.get("description")
    ]
    return "Dependencies:\n" + "\n".join(f"- {d}" for d in descriptions) if descriptions else ""
