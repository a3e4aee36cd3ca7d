"""STIX test inputs: the real bundles of the upstream snapshot, and inline bundles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, SourceFile
from pipeline.sources.registry import default_registry
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT


def parse_upstream(source: str) -> ParseOutcome:
    """The source's real bundle from the snapshot, parsed as the pipeline does."""
    return parse_source(default_registry()[source], UPSTREAM / source)


def bundle_file(source: str, objects: list[dict[str, Any]], **extra: Any) -> SourceFile:
    """A bundle of the given objects, as the source's file with the source's options."""
    bundle = {"type": "bundle", "id": "bundle--t", "objects": objects, **extra}
    spec = default_registry()[source]
    return SourceFile(
        source=source,
        root=Path("/nonexistent"),
        rel=spec.paths[0],
        data=json.dumps(bundle).encode(),
        options=spec.options,
        web_url=spec.web_url.replace("{version}", "main"),
    )
