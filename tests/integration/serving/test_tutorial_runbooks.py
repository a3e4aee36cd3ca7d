"""docs/tutorials/runbooks.md's own lines, run as written: the page's folders.yaml and keys file, its folders
published through Dagster in process (for its step 4, `make run`), then its searches and plan over a loopback
API: the public folder answers everyone, the tenant's folder only its key."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from pipeline.folders import load_folders
from pipeline.sources.mirror import Mirror
from pipeline.sources.registry import SourceSpec
from serving.settings import ServingSettings
from tests.plugins.graph import harness

from .conftest import live_server
from .doc_pages import blocks, run_blocks, run_sh

PAGE = "tutorials/runbooks.md"
WRITE = ("1. Write the documents", "2. Declare the folders", "3. Give your team a key")
QUERY = ("5. Search", "6. Plan")


def test_the_tutorial_runs_as_written(
    db_url: str,
    mirror: Mirror,
    small_specs: Mapping[str, SourceSpec],
    settings_for: Callable[..., ServingSettings],
    tmp_path: Path,
) -> None:
    run_blocks([b for section in WRITE for b in blocks(PAGE, section)], tmp_path)
    folders = load_folders(tmp_path / "folders.yaml")
    assert [(f.name, f.tenant) for f in folders] == [("runbooks", None), ("soc_notes", "acme")]
    h = harness(db_url, mirror, tmp_path / "work", small_specs, folders=folders)
    for folder in folders:
        h.materialize(f"key:folders/{folder.name}")
        h.materialize(f"key:embeddings/{folder.name}")
    with live_server(db_url, settings_for, api_keys_file=tmp_path / "api-keys.yaml") as api:
        run_blocks([b for section in QUERY for b in blocks(PAGE, section)], tmp_path, api=api)
        [anonymous] = [b.text for b in blocks(PAGE, "5. Search") if "X-API-Key" in b.text]
        anonymous = anonymous.replace('-H "X-API-Key: $(cat acme.key)" ', "").split(" | jq")[0]
        hidden = run_sh(anonymous, tmp_path, api=api)  # without the key, soc_notes is no source at all
        assert "unknown source 'soc_notes'; valid sources: runbooks" in hidden, hidden
