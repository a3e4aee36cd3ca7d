"""What a refresh is built from: the fingerprint changes with each of its inputs, and only ATT&CK
enriches from its own bundle."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pipeline.refresh_inputs import enrichment_lookup, pinned_version, publish_fingerprint, source_row
from pipeline.sources.registry import default_registry


def test_the_fingerprint_follows_version_parser_chunker_and_names() -> None:
    spec = default_registry()["sigma"]
    names = {"T1003": "OS Credential Dumping"}
    base = publish_fingerprint(spec, "v1", "c1", names)
    assert base == publish_fingerprint(spec, "v1", "c1", dict(names))
    assert base != publish_fingerprint(spec, "v2", "c1", names)
    assert base != publish_fingerprint(spec, "v1", "c2", names)
    assert base != publish_fingerprint(spec, "v1", "c1", {"T1003": "Credential Dumping"})
    assert base != publish_fingerprint(replace(spec, parser_version="other"), "v1", "c1", names)
    assert base != publish_fingerprint(spec, "v1", "c1", None)


def test_sources_other_than_attack_use_the_published_names(tmp_path: Path) -> None:
    published = {"T1003": "OS Credential Dumping"}
    assert enrichment_lookup(default_registry()["sigma"], tmp_path, published) is published


def test_a_pin_stands_in_for_the_probe_and_the_row_describes_the_source() -> None:
    spec = default_registry()["cisa_kev"]
    seen = pinned_version(spec, "2026.11.01")
    assert (seen.source, seen.version, seen.tracking, seen.commit) == ("cisa_kev", "2026.11.01", spec.tracking, None)
    row = source_row(spec)
    assert (row.name, row.kind, row.category, row.tracking) == ("cisa_kev", "online", spec.category, spec.tracking)
