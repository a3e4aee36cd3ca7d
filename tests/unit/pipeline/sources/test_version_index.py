"""ATT&CK's release index read as the release sensor reads it: the stored index.json (its quirks: Mobile's
11.2-beta pre-releases, Mobile and ICS bundles beside Enterprise's) and what the index must not say."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from pipeline.sources.registry import default_registry, load_registry
from pipeline.sources.upstream import UpstreamConfig
from pipeline.sources.version_index import IndexedRelease, indexed_release, read_index, versioned
from secrag.errors import ConfigError, FetchError, FetchTooLarge
from secrag.files.package_data import package_path
from secrag.net.download_limits import DownloadLimits
from secrag.net.url_policy import UrlPolicy
from tests.plugins.attack_spec_v4 import next_index
from tests.plugins.upstream import SNAPSHOT

INDEX = SNAPSHOT / "mitre_attack" / "attack-stix-data" / "index.json"
RAW = "https://raw.githubusercontent.com/mitre-attack/attack-stix-data/master"


@pytest.fixture(scope="module")
def stored() -> bytes:
    return INDEX.read_bytes()


def _release(data: bytes, source: str = "mitre_attack") -> IndexedRelease:
    return indexed_release(data, default_registry()[source], "index.json")


def test_the_stored_index_names_18_1_and_its_versioned_bundles(stored: bytes) -> None:
    assert _release(stored) == IndexedRelease(
        "18.1",
        {"enterprise-attack/enterprise-attack.json": versioned("enterprise-attack/enterprise-attack.json", "18.1")},
    )
    detections = _release(stored, "mitre_attack_detections")
    assert detections.label == "v18.1"
    assert detections.files["ics-attack/ics-attack.json"] == "ics-attack/ics-attack-18.1.json"
    assert _release(next_index(stored), "mitre_attack_mobile").version == "19.0"


def test_the_newest_is_by_number_not_position_and_pre_releases_never_count(stored: bytes) -> None:
    index = json.loads(stored)
    for collection in index["collections"]:
        collection["versions"].reverse()  # oldest first
        collection["versions"].append({"version": "19.0-beta", "url": f"{RAW}/x/x-19.0-beta.json"})
    assert _release(json.dumps(index).encode(), "mitre_attack_mobile").version == "18.1"


def _with_newest(stored: bytes, **entry: object) -> bytes:
    index = json.loads(stored)
    index["collections"][0]["versions"].insert(0, entry)
    return json.dumps(index).encode()


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (
            {"version": "19.0", "url": "https://evil.example/enterprise-attack/enterprise-attack-19.0.json"},
            "not a file URL",
        ),
        (
            {"version": "19.0", "url": "http://raw.githubusercontent.com/mitre-attack/attack-stix-data/master/a.json"},
            "not a file URL",
        ),
        (
            {
                "version": "19.0",
                "url": "https://raw.githubusercontent.com/someone/else/master/enterprise-attack/enterprise-attack-19.0.json",
            },
            "outside",
        ),
        (
            {"version": "19.0", "url": f"{RAW.replace('master', 'dev')}/enterprise-attack/enterprise-attack-19.0.json"},
            "outside",
        ),
        ({"version": "19.0", "url": f"{RAW}/enterprise-attack/../enterprise-attack-19.0.json"}, "plain file path"),
        ({"version": "19.0", "url": f"{RAW}/enterprise-attack/enterprise-attack-19.0.json?x=1"}, "plain file path"),
        ({"version": "19.0", "url": f"{RAW}/enterprise/enterprise-19.0.json"}, "no collection's newest version"),
        ({"version": 19, "url": f"{RAW}/enterprise-attack/enterprise-attack-19.json"}, "not a string"),
    ],
)
def test_an_index_naming_another_file_is_refused(stored: bytes, entry: dict, says: str) -> None:
    with pytest.raises(FetchError, match=says):
        _release(_with_newest(stored, **entry))


def test_bundles_of_different_releases_are_refused(stored: bytes) -> None:
    index = json.loads(stored)
    enterprise = index["collections"][0]["versions"]
    enterprise.insert(0, {"version": "19.0", "url": f"{RAW}/enterprise-attack/enterprise-attack-19.0.json"})
    with pytest.raises(FetchError, match="newest versions of the source's bundles differ"):
        _release(json.dumps(index).encode(), "mitre_attack_detections")


@pytest.mark.parametrize(
    ("data", "says"),
    [(b"<html>", "not valid JSON"), (b"{}", "no `collections`"), (b'{"collections": [{}]}', "lists no versions")],
)
def test_a_broken_index_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(FetchError, match=says):
        _release(data)


def test_an_index_over_the_download_limit_is_refused(tmp_path: Path, stored: bytes) -> None:
    """Read through a real git repository (file://) with the download limit below the index's size."""
    repo = tmp_path / "repo"
    (repo).mkdir()
    (repo / "index.json").write_bytes(stored)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "index"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env={**env, "PATH": "/usr/bin:/bin"})
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    spec = default_registry()["mitre_attack"]
    cfg = UpstreamConfig(policy=dataclasses.replace(UrlPolicy(), allow_file=True))
    assert read_index(repo.as_uri(), commit.stdout.strip(), spec, cfg, 30.0) == stored
    small = dataclasses.replace(cfg, limits=DownloadLimits(max_bytes=len(stored) - 1))
    with pytest.raises(FetchTooLarge, match="index.json"):
        read_index(repo.as_uri(), commit.stdout.strip(), spec, small, 30.0)
    (repo / "index.json").unlink()
    subprocess.run(
        ["git", "-C", str(repo), "commit", "-q", "-am", "no index"], check=True, env={**env, "PATH": "/usr/bin:/bin"}
    )
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    assert read_index(repo.as_uri(), head.stdout.strip(), spec, cfg, 30.0) is None


@pytest.mark.parametrize(
    ("line", "valid"),
    [
        ("version_index: index.json", True),
        ("version_index: ../index.json", False),
        ("version_index: /index.json", False),
        ("version_index: index.yaml", False),
        ("tracking: commit", False),  # a release index belongs to a release source
    ],
)
def test_the_registry_takes_a_release_index_only_as_a_json_file_of_a_release_source(
    tmp_path: Path, line: str, valid: bool
) -> None:
    shipped = (package_path("pipeline.sources", "registry") / "mitre_attack.yaml").read_text(encoding="utf-8")
    key = line.split(":")[0] + ":"
    entry = "\n".join(line if row.startswith(key) else row for row in shipped.splitlines()) + "\n"
    (tmp_path / "mitre_attack.yaml").write_text(entry, encoding="utf-8")
    if valid:
        assert load_registry(tmp_path)["mitre_attack"].version_index == "index.json"
        return
    with pytest.raises(ConfigError, match="version_index"):
        load_registry(tmp_path)
