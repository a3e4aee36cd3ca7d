"""ATT&CK bundles as spec v4 leaves them: the stored v18.1 without what v18 deprecated, and index.json naming the
next release (for tests and benches: ../shared stays as it is)."""

from __future__ import annotations

import json
from typing import Any

from pipeline.sources.parsers.stix.deprecated import DATA_SOURCE, DATA_SOURCE_REF, TECHNIQUE_FIELDS

NEXT_VERSION = "19.0"
BUNDLES = ("enterprise-attack/enterprise-attack.json", "mobile-attack/mobile-attack.json", "ics-attack/ics-attack.json")


def _kept(obj: dict[str, Any], components: set[str], sources: set[str]) -> bool:
    if obj.get("type") == DATA_SOURCE:
        return False
    if obj.get("type") != "relationship":
        return True
    component_detects = obj.get("relationship_type") == "detects" and obj.get("source_ref") in components
    return not component_detects and not ({obj.get("source_ref"), obj.get("target_ref")} & sources)


def strip_bundle(data: bytes) -> bytes:
    """The bundle without the technique fields, data source objects (and relationships naming them), data
    components' `x_mitre_data_source_ref` and data component `detects` relationships that spec v4 removes."""
    bundle = json.loads(data)
    objects = bundle["objects"]
    components = {o["id"] for o in objects if o.get("type") == "x-mitre-data-component"}
    sources = {o["id"] for o in objects if o.get("type") == DATA_SOURCE}
    kept = []
    for obj in objects:
        if not _kept(obj, components, sources):
            continue
        drop = TECHNIQUE_FIELDS if obj.get("type") == "attack-pattern" else (DATA_SOURCE_REF,)
        kept.append({k: v for k, v in obj.items() if k not in drop})
    return json.dumps({**bundle, "objects": kept}, indent=1).encode()


def next_index(data: bytes, version: str = NEXT_VERSION) -> bytes:
    """index.json with `version` listed first in every collection (its URL and date after the newest's)."""
    index = json.loads(data)
    for collection in index["collections"]:
        newest = collection["versions"][0]
        url = newest["url"].replace(f"-{newest['version']}.json", f"-{version}.json")
        collection["versions"].insert(0, {"version": version, "url": url, "modified": newest["modified"]})
    return json.dumps(index, indent=4).encode()


def newest_version(data: bytes) -> str:
    """The newest version index.json lists (its first collection's first)."""
    return str(json.loads(data)["collections"][0]["versions"][0]["version"])
