"""Local mirrors: deterministic, reused while the snapshot is unchanged, changeable for tests."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pipeline.sources.bundled import WithBundled
from pipeline.sources.configure import upstream_for
from pipeline.sources.mirror import Mirror, build_mirror
from pipeline.sources.mirror_plan import snapshot_folder
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.probes import ls_remote, probe
from pipeline.sources.registry import SourceSpec
from pipeline.sources.snapshot import SnapshotUpstream
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import ConfigError
from secrag.settings import Settings
from tests.plugins.mirror_changes import add_commit

SMALL = ["hijacklibs", "cisa_kev", "stratus_red_team"]


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_mirror_layout(
    mirror_factory: Callable[..., Mirror], snapshot_dir: Path, source_specs: Mapping[str, SourceSpec]
) -> None:
    mirror = mirror_factory(SMALL)
    assert set(mirror.repos) == set(SMALL)
    git_dir = mirror.git_dir("hijacklibs")
    assert _git(git_dir, "config", "uploadpack.allowFilter") == "true"
    assert _git(git_dir, "config", "uploadpack.allowAnySHA1InWant") == "true"
    branch = source_specs["hijacklibs"].branch
    tracked = set(_git(git_dir, "ls-tree", "-r", "--name-only", f"refs/heads/{branch}").splitlines())
    on_disk = {
        p.relative_to(snapshot_dir / "hijacklibs").as_posix()
        for p in (snapshot_dir / "hijacklibs").rglob("*")
        if p.is_file()
    }
    assert tracked == on_disk
    assert _git(git_dir, "symbolic-ref", "HEAD") == f"refs/heads/{branch}"
    assert "cisa_kev" in mirror.feeds and "hijacklibs" not in mirror.feeds
    spec = source_specs["stratus_red_team"]
    latest = json.loads((mirror.root / "api/repos" / spec.github / "releases/latest").read_text())
    assert latest["tag_name"] == f"mirror-{mirror.head('stratus_red_team')[:12]}"


def test_builds_are_deterministic_and_reused(
    snapshot_dir: Path, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    first = build_mirror(snapshot_dir, tmp_path / "a", specs=source_specs, sources=["mitre_car"])
    second = build_mirror(snapshot_dir, tmp_path / "b", specs=source_specs, sources=["mitre_car"])
    assert first.head("mitre_car") == second.head("mitre_car")
    objects = first.git_dir("mitre_car") / "objects"
    before = objects.stat().st_ino
    again = build_mirror(snapshot_dir, tmp_path / "a", specs=source_specs, sources=["mitre_car"])
    assert again.head("mitre_car") == first.head("mitre_car")
    assert objects.stat().st_ino == before  # reused, not rebuilt


def test_a_changed_mirror_is_rebuilt_from_the_snapshot(
    snapshot_dir: Path, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    mirror = build_mirror(snapshot_dir, tmp_path, specs=source_specs, sources=["mitre_car"])
    original = mirror.head("mitre_car")
    add_commit(mirror, "mitre_car", {"analytics/extra.yaml": b"title: x\n"})
    rebuilt = build_mirror(snapshot_dir, tmp_path, specs=source_specs, sources=["mitre_car"])
    assert rebuilt.head("mitre_car") == original
    kept = add_commit(rebuilt, "mitre_car", {"analytics/extra.yaml": b"title: x\n"}, keep=True)
    assert build_mirror(snapshot_dir, tmp_path, specs=source_specs, sources=["mitre_car"]).head("mitre_car") == kept


def test_add_commit_changes_adds_and_removes(mirror_factory: Callable[..., Mirror]) -> None:
    mirror = mirror_factory(["hijacklibs"], fresh=True)
    parent = mirror.head("hijacklibs")
    tree_before = set(_git(mirror.git_dir("hijacklibs"), "ls-tree", "-r", "--name-only", parent).splitlines())
    victim = sorted(t for t in tree_before if t.endswith(".yml"))[0]
    sha = add_commit(
        mirror, "hijacklibs", {victim: None, "yml/new/added.yml": b"Name: added.dll\n", "LICENSE": b"changed\n"}
    )
    git_dir = mirror.git_dir("hijacklibs")
    assert mirror.head("hijacklibs") == sha
    assert _git(git_dir, "rev-parse", f"{sha}^") == parent
    tree = set(_git(git_dir, "ls-tree", "-r", "--name-only", sha).splitlines())
    assert tree == (tree_before - {victim}) | {"yml/new/added.yml"}
    assert _git(git_dir, "show", f"{sha}:LICENSE") == "changed"


@pytest.mark.parametrize("rel", ["/etc/passwd", "../x", "a/../../x", "a\nb"])
def test_add_commit_refuses_paths_outside_the_repo(mirror_factory: Callable[..., Mirror], rel: str) -> None:
    mirror = mirror_factory(["hijacklibs"])
    head = mirror.head("hijacklibs")
    with pytest.raises(ConfigError):
        add_commit(mirror, "hijacklibs", {rel: b"x"})
    assert mirror.head("hijacklibs") == head


def test_unknown_source_folder_is_a_config_error(snapshot_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no folder 'nope'"):
        build_mirror(snapshot_dir, tmp_path, sources=["nope"])


def test_settings_with_a_mirror_point_every_source_at_it(snapshot_dir: Path, tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot"
    snapshot.mkdir()
    for name in SMALL:  # a small snapshot keeps this fast; the layout is the real one
        (snapshot / name).symlink_to(snapshot_dir / name)
    settings = Settings(upstream_mirror=snapshot, data_dir=tmp_path / "data", http_allowed_hosts=["extra.example"])
    bundled = upstream_for(settings)
    assert isinstance(bundled, WithBundled)  # the sources shipped with secrag need no mirror
    upstream = bundled.inner
    assert isinstance(upstream, SnapshotUpstream)
    assert upstream.mirror.root == (tmp_path / "data" / "mirrors").resolve()
    assert set(upstream.mirror.repos) == set(SMALL) and set(upstream.mirror.feeds) == {"cisa_kev"}
    assert {"extra.example", "github.com"} <= upstream.config.policy.allowed_hosts
    again = upstream_for(settings)
    assert again == bundled


def test_settings_without_a_mirror_use_the_real_upstreams() -> None:
    bundled = upstream_for(Settings(github_token="t", http_allowed_hosts=[]))
    assert isinstance(bundled, WithBundled)
    upstream = bundled.inner
    assert isinstance(upstream, OnlineUpstream)
    cfg = upstream.config
    assert (cfg.github_api_base, cfg.github_token, cfg.policy.allow_file) == ("https://api.github.com", "t", False)
    assert dict(cfg.repo_overrides) == {} and dict(cfg.feed_overrides) == {}


@pytest.mark.slow
def test_whole_snapshot_mirror(snapshot_dir: Path, source_specs: Mapping[str, SourceSpec], tmp_path: Path) -> None:
    mirror = build_mirror(snapshot_dir, tmp_path, specs=source_specs)
    manifest = json.loads((snapshot_dir / "MANIFEST.json").read_text())
    # a source without a folder of its own reads the folder of one on the same repository and branch
    sharing = {
        n for n in source_specs if n not in manifest["sources"] and snapshot_folder(n, source_specs, snapshot_dir)
    }
    assert {"mitre_attack_procedures", "mitre_attack_detections"} <= sharing
    assert set(mirror.repos) == set(manifest["sources"]) | sharing
    cfg = UpstreamConfig().with_mirror(mirror.repos, mirror.feeds, mirror.api_base)
    for name, spec in source_specs.items():
        if spec.tracking == "bundled":
            continue  # shipped with secrag, never mirrored (pipeline/sources/bundled.py)
        seen = probe(spec, cfg)
        if spec.tracking != "feed":
            assert seen.commit == mirror.head(name)
    refs = ls_remote(mirror.repos["sigma"], ["refs/heads/master"], cfg, timeout=30)
    assert refs == {"refs/heads/master": mirror.head("sigma")}


def test_a_source_on_another_s_repository_shares_its_mirror_and_release(
    source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    """mitre_attack_procedures has no snapshot folder: it reads mitre_attack's, at the same release."""
    snapshot = tmp_path / "snapshot"
    bundle = snapshot / "mitre_attack" / source_specs["mitre_attack"].paths[0]
    bundle.parent.mkdir(parents=True)
    bundle.write_text(json.dumps({"type": "bundle", "id": "bundle--t", "objects": []}), encoding="utf-8")
    specs = {n: source_specs[n] for n in ("mitre_attack", "mitre_attack_procedures")}
    mirror = build_mirror(snapshot, tmp_path / "mirror", specs=specs)
    assert mirror.repos["mitre_attack_procedures"] == mirror.repos["mitre_attack"]
    upstream = SnapshotUpstream(mirror, UpstreamConfig())
    attack, procedures = (upstream.probe(specs[n]) for n in ("mitre_attack", "mitre_attack_procedures"))
    assert procedures.version == attack.version and procedures.commit == attack.commit
    fetched = upstream.fetch(specs["mitre_attack_procedures"], procedures, tmp_path / "work")
    assert (fetched.root / specs["mitre_attack_procedures"].paths[0]).read_bytes() == bundle.read_bytes()


def test_a_source_of_several_bundles_reads_them_from_the_shared_mirror(
    source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    """mitre_attack_detections reads ATT&CK's three bundles from mitre_attack's folder, at its release."""
    snapshot = tmp_path / "snapshot"
    spec = source_specs["mitre_attack_detections"]
    for path in spec.paths:
        bundle = snapshot / "mitre_attack" / path
        bundle.parent.mkdir(parents=True)
        bundle.write_text(json.dumps({"type": "bundle", "id": f"bundle--{bundle.stem}", "objects": []}), "utf-8")
    specs = {n: source_specs[n] for n in ("mitre_attack", "mitre_attack_detections")}
    mirror = build_mirror(snapshot, tmp_path / "mirror", specs=specs)
    upstream = SnapshotUpstream(mirror, UpstreamConfig())
    seen = upstream.probe(spec)
    assert seen.version == upstream.probe(specs["mitre_attack"]).version
    fetched = upstream.fetch(spec, seen, tmp_path / "work")
    for path in spec.paths:
        assert (fetched.root / path).read_bytes() == (snapshot / "mitre_attack" / path).read_bytes()
