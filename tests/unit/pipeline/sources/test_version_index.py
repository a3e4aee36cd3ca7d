"""ATT&CK's release index read as the release sensor reads it: the stored index.json (its quirks: Mobile's
11.2-beta pre-releases, Mobile and ICS bundles beside Enterprise's) and what the index must not say."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest

from pipeline.sources.fetch import fetch
from pipeline.sources.probes import probe
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


GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "PATH": "/usr/bin:/bin",
}
LOCAL = UpstreamConfig(policy=dataclasses.replace(UrlPolicy(), allow_file=True), probe_timeout=30.0)


def _commit(repo: Path, files: dict[str, bytes | None]) -> str:
    """Commit files (None deletes one) on the repository's master branch (created on first use); the new SHA."""
    if not repo.exists():
        repo.mkdir()
        subprocess.run(["git", "-C", str(repo), "init", "-q", "-b", "master"], check=True, env=GIT_ENV)
    for rel, data in files.items():
        path = repo / rel
        if data is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for args in (["add", "-A"], ["commit", "-q", "-m", "change"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=GIT_ENV)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return head.stdout.strip()


def test_an_index_over_the_download_limit_is_refused_and_a_commit_without_one_has_none(
    tmp_path: Path, stored: bytes
) -> None:
    """Read through a real git repository (file://) with the download limit below the index's size."""
    repo, spec = tmp_path / "repo", default_registry()["mitre_attack"]
    commit = _commit(repo, {"index.json": stored})
    assert read_index(repo.as_uri(), commit, spec, LOCAL, 30.0) == stored
    small = dataclasses.replace(LOCAL, limits=DownloadLimits(max_bytes=len(stored) - 1))
    with pytest.raises(FetchTooLarge, match="index.json"):
        read_index(repo.as_uri(), commit, spec, small, 30.0)
    assert read_index(repo.as_uri(), _commit(repo, {"index.json": None, "x": b"x"}), spec, LOCAL, 30.0) is None


def test_the_fetch_reads_the_bundle_the_index_names_and_fails_naming_one_the_commit_lacks(
    tmp_path: Path, stored: bytes
) -> None:
    repo, spec = tmp_path / "repo", default_registry()["mitre_attack"]
    cfg = dataclasses.replace(LOCAL, repo_overrides={"mitre_attack": repo.as_uri()})
    bundle = spec.paths[0]
    _commit(repo, {"index.json": next_index(stored), bundle: b'{"release": "18.1"}'})
    seen = probe(spec, cfg)
    assert seen.version == "v19.0"
    with pytest.raises(
        FetchError,
        match="names enterprise-attack/enterprise-attack-19.0.json for v19.0, which that commit does not hold",
    ):
        fetch(spec, seen, cfg, tmp_path / "lacking")
    _commit(repo, {versioned(bundle, "19.0"): b'{"release": "19.0"}'})
    seen = probe(spec, cfg, known=seen)
    fetched = fetch(spec, seen, cfg, tmp_path / "work")
    assert (fetched.version, fetched.commit) == ("v19.0", seen.commit)
    assert (fetched.root / bundle).read_bytes() == b'{"release": "19.0"}'
    assert not (fetched.root / "index.json").exists() and not (fetched.root / versioned(bundle, "19.0")).exists()
    # A run pinned to the release the sensor saw (no tag named v19.0 exists) takes the head the index lists it at.
    pinned = fetch(spec, seen, cfg, tmp_path / "pinned", pin="v19.0")
    assert (pinned.root / bundle).read_bytes() == b'{"release": "19.0"}' and pinned.commit == seen.commit


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
