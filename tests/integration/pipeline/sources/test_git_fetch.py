"""Fetching exactly the probed version: sparse shallow git checkouts, pins and feeds."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pipeline.sources.fetch import fetch
from pipeline.sources.git_fetch import checkout, git_env, sparse_patterns
from pipeline.sources.mirror import Mirror
from pipeline.sources.parsing import select_files
from pipeline.sources.probes import probe
from pipeline.sources.registry import SourceSpec
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import FetchError
from secrag.net.url_policy import UrlPolicy
from tests.plugins.mirror_changes import add_commit

SOURCES = ["hijacklibs", "mitre_car", "cisa_kev", "stratus_red_team"]
ConfigFactory = Callable[..., UpstreamConfig]


@pytest.fixture
def mirror(mirror_factory: Callable[..., Mirror]) -> Mirror:
    return mirror_factory(SOURCES)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


def _head(root: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.parametrize("name", ["hijacklibs", "mitre_car"])
def test_sparse_checkout_holds_only_the_selected_files_at_the_probed_commit(
    mirror: Mirror,
    upstream_config: ConfigFactory,
    source_specs: Mapping[str, SourceSpec],
    snapshot_dir: Path,
    tmp_path: Path,
    name: str,
) -> None:
    spec, cfg = source_specs[name], upstream_config(mirror)
    seen = probe(spec, cfg)
    result = fetch(spec, seen, cfg, tmp_path / "work")
    assert (result.version, result.commit) == (seen.version, seen.commit)
    assert _head(result.root) == seen.commit
    selected = {p.relative_to(result.root).as_posix() for p in select_files(spec, result.root)}
    assert _files(result.root) == selected  # nothing outside the spec's globs (LICENSE, ...)
    original = snapshot_dir / name
    upstream = {p.relative_to(original).as_posix() for p in select_files(spec, original)}
    assert selected == upstream  # ... and everything inside them
    some = sorted(selected)[0]
    assert (result.root / some).read_bytes() == (snapshot_dir / name / some).read_bytes()


def test_release_source_is_fetched_at_the_tagged_commit(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    spec, cfg = source_specs["stratus_red_team"], upstream_config(mirror)
    seen = probe(spec, cfg)
    result = fetch(spec, seen, cfg, tmp_path / "w")
    assert result.version == seen.version and result.version.startswith("mirror-")
    assert _head(result.root) == result.commit == seen.commit
    assert select_files(spec, result.root)


def test_upstream_moving_after_the_probe_does_not_change_what_is_fetched(
    mirror_factory: Callable[..., Mirror],
    upstream_config: ConfigFactory,
    source_specs: Mapping[str, SourceSpec],
    tmp_path: Path,
) -> None:
    fresh = mirror_factory(["mitre_car"], fresh=True)
    spec, cfg = source_specs["mitre_car"], upstream_config(fresh)
    seen = probe(spec, cfg)
    add_commit(fresh, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    result = fetch(spec, seen, cfg, tmp_path / "w")
    assert _head(result.root) == seen.commit
    assert (result.root / "analytics/CAR-2013-01-002.yaml").is_file()


def test_pin_fetches_an_older_commit(
    mirror_factory: Callable[..., Mirror],
    upstream_config: ConfigFactory,
    source_specs: Mapping[str, SourceSpec],
    tmp_path: Path,
) -> None:
    fresh = mirror_factory(["mitre_car"], fresh=True)
    spec, cfg = source_specs["mitre_car"], upstream_config(fresh)
    old = fresh.head("mitre_car")
    add_commit(fresh, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    latest = probe(spec, cfg)
    assert latest.commit != old
    result = fetch(spec, latest, cfg, tmp_path / "w", pin=old)
    assert (result.version, result.commit, _head(result.root)) == (old, old, old)
    assert (result.root / "analytics/CAR-2013-01-002.yaml").is_file()


def test_pin_by_tag_on_a_release_source(
    mirror_factory: Callable[..., Mirror],
    upstream_config: ConfigFactory,
    source_specs: Mapping[str, SourceSpec],
    tmp_path: Path,
) -> None:
    fresh = mirror_factory(["stratus_red_team"], fresh=True)
    spec, cfg = source_specs["stratus_red_team"], upstream_config(fresh)
    first = probe(spec, cfg)
    add_commit(fresh, "stratus_red_team", {"docs/attack-techniques/new.md": b"# new\n"})
    result = fetch(spec, probe(spec, cfg), cfg, tmp_path / "w", pin=first.version)
    assert (result.version, result.commit) == (first.version, first.commit)
    assert not (result.root / "docs/attack-techniques/new.md").exists()


def test_unknown_commit_fails_with_gits_reason(mirror: Mirror, tmp_path: Path) -> None:
    cfg = UpstreamConfig(policy=UrlPolicy(allow_file=True))
    with pytest.raises(FetchError, match="git checkout of .* at 0123456789ab: .*"):
        checkout(
            mirror.repos["mitre_car"],
            "0123456789abcdef0123456789abcdef01234567",
            ["analytics/*.yaml"],
            tmp_path / "w",
            timeout=30,
            policy=cfg.policy,
        )


@pytest.mark.parametrize("commit", ["main", "HEAD", "abc123", "--upload-pack=x"])
def test_checkout_wants_a_full_sha(mirror: Mirror, tmp_path: Path, commit: str) -> None:
    with pytest.raises(FetchError, match="not a full 40-hex commit SHA"):
        checkout(
            mirror.repos["mitre_car"],
            commit,
            ["analytics/*.yaml"],
            tmp_path / "w",
            timeout=30,
            policy=UrlPolicy(allow_file=True),
        )


def test_checkout_refuses_a_non_empty_folder(mirror: Mirror, tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "old.txt").write_text("x")
    with pytest.raises(FetchError, match="not empty"):
        checkout(
            mirror.repos["mitre_car"],
            mirror.head("mitre_car"),
            ["analytics/*.yaml"],
            tmp_path / "w",
            timeout=30,
            policy=UrlPolicy(allow_file=True),
        )


def test_sparse_patterns_are_anchored_globs() -> None:
    assert sparse_patterns(["rules*/**/*.yml", "/x/y.json"]) == ["/rules*/**/*.yml", "/x/y.json"]


def test_feed_is_downloaded_to_the_registry_path(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    spec, cfg = source_specs["cisa_kev"], upstream_config(mirror, via_http=True)
    seen = probe(spec, cfg)
    result = fetch(spec, seen, cfg, tmp_path / "w")
    target = tmp_path / "w" / spec.paths[0]
    assert (result.root, result.version, result.commit) == (tmp_path / "w", seen.version, None)
    assert target.read_bytes() == mirror.feed_path("cisa_kev").read_bytes()
    assert [p.relative_to(result.root) for p in select_files(spec, result.root)] == [Path(spec.paths[0])]


def test_feed_version_is_read_from_the_downloaded_bytes(
    mirror_factory: Callable[..., Mirror],
    upstream_config: ConfigFactory,
    source_specs: Mapping[str, SourceSpec],
    tmp_path: Path,
) -> None:
    fresh = mirror_factory(["cisa_kev"], fresh=True)
    spec, cfg = source_specs["cisa_kev"], upstream_config(fresh, via_http=True)
    seen = probe(spec, cfg)
    feed = json.loads(fresh.feed_path("cisa_kev").read_bytes())
    feed["catalogVersion"] = "2099.01.01"
    add_commit(fresh, "cisa_kev", {spec.paths[0]: json.dumps(feed).encode()})
    result = fetch(spec, seen, cfg, tmp_path / "w")
    assert seen.version != result.version == "2099.01.01"  # what was fetched is what gets recorded


def test_feeds_cannot_be_pinned(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    spec, cfg = source_specs["cisa_kev"], upstream_config(mirror)
    with pytest.raises(FetchError, match="cannot be pinned"):
        fetch(spec, probe(spec, cfg), cfg, tmp_path / "w", pin="2025.01.01")


def test_feed_path_must_stay_inside_the_workdir(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    cfg = upstream_config(mirror)
    spec = dataclasses.replace(source_specs["cisa_kev"], paths=("../escape.json",))
    with pytest.raises(FetchError, match="plain relative file path"):
        fetch(spec, probe(spec, cfg), cfg, tmp_path / "w")


def test_failed_checkout_leaves_nothing_behind(mirror: Mirror, tmp_path: Path) -> None:
    with pytest.raises(FetchError):
        checkout(
            mirror.repos["mitre_car"],
            "0" * 40,
            ["analytics/*.yaml"],
            tmp_path / "w",
            timeout=30,
            policy=UrlPolicy(allow_file=True),
        )
    assert not (tmp_path / "w").exists()


def test_git_connects_only_to_the_vetted_addresses() -> None:
    @dataclasses.dataclass(frozen=True)
    class Dns(UrlPolicy):
        answers: tuple[str, ...] = ("140.82.112.3", "2606:50c0:8000::153")

        def resolve(self, host: str, port: int) -> list[str]:
            return list(self.answers)

    env = git_env(Dns(), url="https://github.com/SigmaHQ/sigma.git")
    config = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))}
    assert config == {
        "http.followRedirects": "false",
        "http.curloptResolve": "github.com:443:140.82.112.3,[2606:50c0:8000::153]",
    }
    with pytest.raises(FetchError, match="not a public address"):
        git_env(Dns(answers=("192.168.1.10",)), url="https://github.com/SigmaHQ/sigma.git")
    assert "http.curloptResolve" not in git_env(UrlPolicy(allow_file=True), url="file:///m/x.git").values()


def test_a_short_sha_pin_fails_with_a_clear_message(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    spec, cfg = source_specs["mitre_car"], upstream_config(mirror)
    short = mirror.head("mitre_car")[:10]
    with pytest.raises(FetchError, match="looks like a short commit SHA") as info:
        fetch(spec, probe(spec, cfg), cfg, tmp_path / "w", pin=short)
    assert "full 40-hex" in info.value.hint
