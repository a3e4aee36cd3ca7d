"""What a snapshot's sources need mirrored, from the registry or else the snapshot's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.mirror_plan import plan
from pipeline.sources.registry import default_registry
from secrag.errors import ConfigError


def test_registry_sources_keep_their_tracking_and_others_their_manifest_branch(tmp_path: Path) -> None:
    for name in ("cisa_kev", "sigma", "notes"):
        (tmp_path / name).mkdir()
    (tmp_path / ".hidden").mkdir()
    manifest = {"sources": {"notes": {"branch": "trunk", "commit_date": "2026-01-02T00:00:00+00:00"}}}
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest), encoding="utf-8")
    planned = {s.name: s for s in plan(tmp_path, default_registry(), None)}
    assert sorted(planned) == ["cisa_kev", "notes", "sigma"]
    kev = default_registry()["cisa_kev"]
    assert planned["cisa_kev"].tracking == kev.tracking == "feed" and planned["cisa_kev"].feed_path == kev.paths[0]
    assert (planned["notes"].branch, planned["notes"].date) == ("trunk", "1767312000 +0000")
    assert planned["sigma"].date == "946684800 +0000"  # no commit date in the manifest: a fixed epoch


def test_a_source_without_a_folder_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no folder 'sigma'"):
        plan(tmp_path, default_registry(), ["sigma"])


def test_a_source_on_another_s_repository_reads_its_folder(tmp_path: Path) -> None:
    (tmp_path / "mitre_attack").mkdir()
    everything = {s.name: s for s in plan(tmp_path, default_registry(), None)}
    assert sorted(everything) == [
        "mitre_attack",
        "mitre_attack_detections",
        "mitre_attack_ics",
        "mitre_attack_ics_procedures",
        "mitre_attack_mobile",
        "mitre_attack_mobile_procedures",
        "mitre_attack_procedures",
    ]
    procedures = everything["mitre_attack_procedures"]
    assert (procedures.folder, procedures.mirror_name, procedures.tracking) == (
        "mitre_attack",
        "mitre_attack",
        "release",
    )
    assert everything["mitre_attack"].mirror_name == "mitre_attack"
    # Asked for alone, it brings the source whose folder it reads, which builds the one mirror.
    alone = {s.name: s.folder for s in plan(tmp_path, default_registry(), ["mitre_attack_procedures"])}
    assert alone == {"mitre_attack": "", "mitre_attack_procedures": "mitre_attack"}
    assert everything["mitre_attack_detections"].folder == "mitre_attack"
    assert {everything[f"mitre_attack_{d}"].folder for d in ("mobile", "ics")} == {"mitre_attack"}
