"""The sources bundled with secrag (the clarifications): probed, fetched and published without any
upstream, versioned by their content."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, NoReturn

import psycopg
import pytest

from pipeline.chunking import ChunkConfig
from pipeline.refresh import RefreshLimits, refresh_source
from pipeline.sources.bundled import WithBundled, bundled_version
from pipeline.sources.registry import default_registry
from pipeline.store import Store
from secrag.db.queries import Queries
from secrag.errors import FetchError
from secrag.files.package_data import sql_dir


class NoUpstream:
    """Any call is a failure: a bundled source never reaches its configured upstream."""

    config = None

    def describe(self) -> str:
        return "no upstream"

    def probe(self, *_: Any) -> NoReturn:  # noqa: ANN401
        raise AssertionError("a bundled source probed the upstream")

    def fetch(self, *_: Any) -> NoReturn:  # noqa: ANN401
        raise AssertionError("a bundled source fetched from the upstream")


def test_the_clarifications_are_published_once_per_content(db: psycopg.Connection, tmp_path: Path) -> None:
    spec = default_registry()["clarifications"]
    upstream = WithBundled(NoUpstream())  # type: ignore[arg-type]
    limits = RefreshLimits(ChunkConfig(), max_shrink=0.5, max_error_share=0.2, work_dir=tmp_path)

    def refresh() -> Any:  # noqa: ANN401
        return refresh_source(spec, upstream, db, Store(sql_dir()), Queries(sql_dir(), "pipeline"), limits)

    first = refresh()
    assert first.status == "published" and first.records >= 12
    assert first.version == bundled_version(spec) and first.version.startswith("sha256:")
    body, techniques = db.execute(
        "SELECT body, techniques FROM documents WHERE doc_id = 'clarifications:CLAR-004'"
    ).fetchone()
    assert body.startswith("Misconception:") and "event 1102" in body and techniques == ["T1070.001"]
    stored = db.execute("SELECT media_type, whole_file FROM document_raw WHERE doc_id = 'clarifications:CLAR-004'")
    assert stored.fetchone() == ("application/yaml", False)
    assert refresh().status == "unchanged"


def test_a_bundled_source_has_only_its_shipped_version(tmp_path: Path) -> None:
    spec = default_registry()["clarifications"]
    upstream = WithBundled(NoUpstream())  # type: ignore[arg-type]
    seen = upstream.probe(spec)
    with pytest.raises(FetchError, match="only the version shipped"):
        upstream.fetch(spec, seen, tmp_path, pin="sha256:0000000000000000")
    fetched = upstream.fetch(spec, seen, tmp_path, pin=seen.version)
    assert (fetched.root / "clarifications.yaml").is_file() and fetched.version == seen.version
    other = dataclasses.replace(spec, paths=("nothing-*.yaml",))
    with pytest.raises(FetchError, match="no bundled file matches"):
        upstream.probe(other)
