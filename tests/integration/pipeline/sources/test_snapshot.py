"""The snapshot upstream: probes read the mirrors directly and agree with the online probes on them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from pipeline.sources.mirror import Mirror
from pipeline.sources.online import OnlineUpstream
from pipeline.sources.registry import SourceSpec
from pipeline.sources.snapshot import SnapshotUpstream
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import FetchError
from tests.plugins.mirror_changes import add_commit

SOURCES = ["hijacklibs", "cisa_kev", "stratus_red_team"]
ConfigFactory = Callable[..., UpstreamConfig]


@pytest.fixture
def mirror(mirror_factory: Callable[..., Mirror]) -> Mirror:
    return mirror_factory(SOURCES)


@pytest.mark.parametrize("name", SOURCES)
def test_snapshot_and_online_probes_agree(
    mirror: Mirror, upstream_config: ConfigFactory, source_specs: Mapping[str, SourceSpec], name: str
) -> None:
    spec = source_specs[name]
    snapshot = SnapshotUpstream(mirror, UpstreamConfig()).probe(spec)
    online = OnlineUpstream(upstream_config(mirror)).probe(spec)
    assert (snapshot.version, snapshot.commit, snapshot.tracking) == (online.version, online.commit, online.tracking)


@pytest.mark.parametrize("name", SOURCES)
def test_fetch_gives_the_probed_files(
    mirror: Mirror, source_specs: Mapping[str, SourceSpec], snapshot_dir: Path, tmp_path: Path, name: str
) -> None:
    spec = source_specs[name]
    upstream = SnapshotUpstream(mirror, UpstreamConfig())
    seen = upstream.probe(spec)
    result = upstream.fetch(spec, seen, tmp_path / "w")
    assert (result.version, result.commit) == (seen.version, seen.commit)
    fetched = {p.relative_to(result.root).as_posix() for p in result.root.rglob("*") if ".git" not in p.parts}
    some = next(p for p in sorted(fetched) if (result.root / p).is_file())
    assert (result.root / some).read_bytes() == (snapshot_dir / name / some).read_bytes()


def test_pins_resolve_tags_and_short_shas(
    mirror_factory: Callable[..., Mirror], source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    fresh = mirror_factory(["stratus_red_team"], fresh=True)
    spec = source_specs["stratus_red_team"]
    upstream = SnapshotUpstream(fresh, UpstreamConfig())
    first = upstream.probe(spec)
    add_commit(fresh, "stratus_red_team", {"docs/attack-techniques/new.md": b"# new\n"})
    latest = upstream.probe(spec)
    assert latest.version != first.version
    by_tag = upstream.fetch(spec, latest, tmp_path / "tag", pin=first.version)
    assert (by_tag.version, by_tag.commit) == (first.version, first.commit)
    assert first.commit is not None
    by_sha = upstream.fetch(spec, latest, tmp_path / "sha", pin=first.commit[:10])
    assert by_sha.commit == first.commit
    assert not (by_sha.root / "docs/attack-techniques/new.md").exists()
    with pytest.raises(FetchError, match="no commit 'v9.9.9' in the mirror"):
        upstream.fetch(spec, latest, tmp_path / "bad", pin="v9.9.9")


def test_feed_cannot_be_pinned_and_unknown_sources_fail(
    mirror: Mirror, source_specs: Mapping[str, SourceSpec], tmp_path: Path
) -> None:
    upstream = SnapshotUpstream(mirror, UpstreamConfig())
    kev = source_specs["cisa_kev"]
    with pytest.raises(FetchError, match="cannot be pinned"):
        upstream.fetch(kev, upstream.probe(kev), tmp_path / "w", pin="2020.01.01")
    with pytest.raises(FetchError, match="sigma: not in the upstream snapshot"):
        upstream.probe(source_specs["sigma"])
