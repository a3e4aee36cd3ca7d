"""tests/upstream.lock.yaml pins what MANIFEST.json of ../shared/upstream pins, and its fetch plan rebuilds exactly
the snapshot's files (repositories, commits, paths, assembled bundles), checked offline: nothing is fetched."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from pipeline.sources.git_fetch import SHA_RE
from secrag.net.url_policy import UrlPolicy
from tests.plugins.upstream import SNAPSHOT
from tests.upstream_data import Source, Upstream, assemble, load_lock, main, matches, place, plan_lines

LOCK = load_lock()
MANIFEST = json.loads((SNAPSHOT / "MANIFEST.json").read_text(encoding="utf-8"))["sources"]


def _snapshot_files(folder: str) -> list[str]:
    root = SNAPSHOT / folder
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _owner(upstreams: tuple[Upstream, ...], rel: str) -> Upstream:
    """The upstream a file of a folder comes from: the one placed under the longest prefix of its path."""
    return max((u for u in upstreams if rel.startswith(u.under)), key=lambda u: len(u.under))


def test_the_lock_pins_what_the_manifest_pins() -> None:
    assert [s.name for s in LOCK.sources] == list(MANIFEST)
    for source in LOCK.sources:
        entry = MANIFEST[source.name]
        assert source.files == entry["files"], source.name
        pinned = [
            (u.repo, u.url, u.branch, u.commit, u.commit_date, f"{source.name}/{u.under}") for u in source.upstreams
        ]
        wanted = [
            (u["repo"], u["url"] + ".git", u["branch"], u["commit"], u["commit_date"], u["placed_under"])
            for u in entry["upstreams"]
        ]
        assert pinned == wanted, source.name


def test_the_plan_fetches_pinned_commits_from_allowed_hosts() -> None:
    policy = UrlPolicy()
    for source in LOCK.sources:
        for up in source.upstreams:
            assert SHA_RE.match(up.commit), up
            policy.check(up.url)  # the production URL policy: https, GitHub only
            assert all(p.startswith("/") and not p.startswith("!") for p in up.sparse), up
    lines = plan_lines(LOCK, Path("/x"))
    mitre = next(line for line in lines if line.startswith("https://github.com/mitre/cti.git"))
    assert mitre == "https://github.com/mitre/cti.git 421deacb77191b38bdd1bf63268954e93da91365 -> /x/mitre_attack"
    assert "    /enterprise-attack/*/*.json => enterprise-attack/enterprise-attack.json (24771 objects)" in lines


@pytest.mark.parametrize("source", LOCK.sources, ids=lambda s: s.name)
def test_the_paths_rebuild_exactly_the_snapshots_files(source: Source) -> None:
    files = _snapshot_files(source.name)
    assert len(files) == source.files
    used: set[str] = set()
    for rel in files:
        up = _owner(source.upstreams, rel)
        inner = rel.removeprefix(up.under)
        hit = [p for p in up.paths if matches([p], inner)]
        assert hit or inner in {b.path for b in up.bundles}, f"{source.name}/{rel} is in no path of {up.repo}"
        assert not any(matches([b.objects], inner) for b in up.bundles), rel
        used.update(hit)
    unused = {p for up in source.upstreams for p in up.paths} - used
    assert not unused, f"{source.name}: patterns matching no file of the snapshot: {sorted(unused)}"


def test_matching_follows_sparse_checkout_patterns() -> None:
    assert matches(["/rules/**"], "rules/windows/process_creation/a.yml")
    assert not matches(["/rules/**"], "rules-dfir/a.yml")
    assert matches(["/atomics/T*/T*.yaml"], "atomics/T1003.001/T1003.001.yaml")
    assert not matches(["/atomics/T*/T*.yaml"], "atomics/T1003.001/src/T1003.yaml")
    assert matches(["/aws/**/*.yml"], "aws/README.yml") and matches(["/aws/**/*.yml"], "aws/events/x/y.yml")
    assert not matches(["/LICENSE"], "sub/LICENSE")


def test_assembling_per_object_files_gives_the_snapshots_bundle(tmp_path: Path) -> None:
    up = next(u for s in LOCK.sources if s.name == "capec" for u in s.upstreams)
    bundle = up.bundles[0]
    original = (SNAPSHOT / "capec" / bundle.path).read_bytes()
    files = []
    for n, obj in enumerate(json.loads(original)["objects"]):  # upstream's layout: one bundle per object
        path = tmp_path / "capec" / "2.1" / obj["type"] / f"{n:05}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"type": "bundle", "id": f"bundle--{n}", "objects": [obj]}), encoding="utf-8")
        files.append(path)
    data = assemble(list(reversed(files)), bundle)
    assert hashlib.sha256(data).hexdigest() == bundle.sha256 == hashlib.sha256(original).hexdigest()
    assert len(json.loads(data)["objects"]) == bundle.count


def test_place_keeps_the_locked_paths_of_a_checkout(tmp_path: Path) -> None:
    source = next(s for s in LOCK.sources if s.name == "mitre_car")
    checkout = tmp_path / "checkout"
    shutil.copytree(SNAPSHOT / "mitre_car", checkout)
    for extra in ("README.md", "analytics/old/CAR-2013-01-002.yaml", "docs/index.md", ".git/HEAD"):
        (checkout / extra).parent.mkdir(parents=True, exist_ok=True)
        (checkout / extra).write_text("not in the snapshot", encoding="utf-8")
    dest = tmp_path / "mitre_car"
    assert place(checkout, source.upstreams[0], dest) == source.files
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == _snapshot_files(
        "mitre_car"
    )


def test_the_command_plans_without_fetching_and_leaves_a_snapshot_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--plan", "--target", str(tmp_path / "upstream")]) == 0
    out = capsys.readouterr().out
    assert out.count("https://github.com/") == sum(len(s.upstreams) for s in LOCK.sources)
    assert not (tmp_path / "upstream").exists()
    (tmp_path / "there").mkdir()
    (tmp_path / "there" / "MANIFEST.json").write_text("{}", encoding="utf-8")
    assert main(["--target", str(tmp_path / "there")]) == 0
    assert [p.name for p in (tmp_path / "there").iterdir()] == ["MANIFEST.json"]
