"""Stores for the upstream-count tests: sources parsed from the snapshot and published as the pipeline does, and
the documents the API lists back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from pipeline.chunking import ChunkConfig
from pipeline.refresh_inputs import source_row
from pipeline.sources.mitre_lookup import techniques_from_bundle
from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from pipeline.store import Store
from secrag.files.package_data import sql_dir

BATCH = 100  # POST /v1/docs takes at most 100 ids


def publish(conn: psycopg.Connection, folders: Mapping[str, Path], bundles: Iterable[Path]) -> None:
    """The technique lookup of `bundles` (as lookups/mitre_techniques builds it), then each source parsed from its
    snapshot folder and published."""
    registry, store = default_registry(), Store(sql_dir())
    store.replace_techniques(conn, [t for bundle in bundles for t in techniques_from_bundle(bundle)], "test")
    for source, folder in folders.items():
        spec = registry[source]
        parsed = parse_source(spec, folder, version="test")
        store.register_source(conn, source_row(spec))
        result = store.publish(
            conn, source=source, version="test", records=parsed.records, lookup={}, chunking=ChunkConfig()
        )
        assert result.status == "published", result


def doc_ids(api: TestClient, source: str) -> list[str]:
    """Every document of the source, as the change feed lists what its publish added."""
    ids, cursor = [], None
    while True:
        params: dict[str, Any] = {"sources": source, "limit": 1000, **({"cursor": cursor} if cursor else {})}
        response = api.get("/v1/changes", params=params)
        assert response.status_code == 200, response.text
        page = response.json()
        ids += [c["doc_id"] for c in page["changes"] if c["change"] == "added"]
        cursor = page["next_cursor"]
        if cursor is None:
            return ids


def documents(api: TestClient, ids: list[str]) -> list[dict[str, Any]]:
    """The documents of `ids` as POST /v1/docs answers them, a batch at a time."""
    found = []
    for start in range(0, len(ids), BATCH):
        response = api.post("/v1/docs", json={"ids": ids[start : start + BATCH]})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["missing"] == [] and not body["truncated"]
        found += body["documents"]
    return found
