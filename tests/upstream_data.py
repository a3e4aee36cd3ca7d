"""Rebuild the upstream snapshot the tests read (../shared/upstream) from the upstreams themselves, at the pins
of tests/upstream.lock.yaml (those of the snapshot's MANIFEST.json), with the pipeline's own git fetcher (a
sparse, shallow checkout of exactly the pinned commit, under the production URL policy).

    python -m tests.upstream_data [--target ../shared/upstream] [--plan] [--source NAME ...]

`make test-data` runs it. `--plan` prints what it would fetch (repository, commit, paths) and fetches nothing.
It builds into `<target>.partial` and renames that into place when every source is there, with a
MANIFEST.json written from the lock; an existing target is left alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import yaml

from pipeline.sources.git_fetch import checkout
from secrag.errors import FetchError
from secrag.net.url_policy import UrlPolicy

log = logging.getLogger("upstream_data")

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "tests" / "upstream.lock.yaml"
TARGET = REPO.parent / "shared" / "upstream"
FETCH_TIMEOUT = 1800.0  # seconds per repository: sigma's rules or ATT&CK's 27,000 object files over a slow link


@dataclass(frozen=True)
class Bundle:
    """A STIX bundle the snapshot assembles from upstream's per-object files (each a bundle of one object)."""

    path: str  # where it goes, inside the upstream's folder
    objects: str  # the sparse pattern of the per-object files
    id: str
    spec_version: str | None
    count: int
    sha256: str


@dataclass(frozen=True)
class Upstream:
    """One repository of a folder: its pin, where in the folder it goes, and what is taken from it."""

    repo: str
    branch: str
    commit: str
    commit_date: str
    under: str  # "" (the folder itself) or a sub-folder such as "attack-stix-data/"
    paths: tuple[str, ...]
    bundles: tuple[Bundle, ...]

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}.git"

    @property
    def sparse(self) -> tuple[str, ...]:
        """Everything the checkout needs: the paths kept and the per-object files of the bundles."""
        return (*self.paths, *(b.objects for b in self.bundles))


@dataclass(frozen=True)
class Source:
    """One folder of the snapshot: the file count it has, from one or more upstreams."""

    name: str
    files: int
    upstreams: tuple[Upstream, ...]


@dataclass(frozen=True)
class Lock:
    collected: str
    sources: tuple[Source, ...]


def load_lock(path: Path = LOCK) -> Lock:
    """The lock file, parsed."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    sources = []
    for name, source in raw["sources"].items():
        upstreams = tuple(
            Upstream(
                repo=u["repo"],
                branch=u["branch"],
                commit=u["commit"],
                commit_date=u["commit_date"],
                under=u.get("under", ""),
                paths=tuple(u["paths"]),
                bundles=tuple(
                    Bundle(b["path"], b["objects"], b["id"], b.get("spec_version"), b["count"], b["sha256"])
                    for b in u.get("bundles", ())
                ),
            )
            for u in source["upstreams"]
        )
        sources.append(Source(name, source["files"], upstreams))
    return Lock(raw["collected"], tuple(sources))


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    """A sparse-checkout pattern (gitignore syntax, anchored with a leading /) as a regex on relative paths."""
    if not pattern.startswith("/") or pattern.startswith("!"):
        raise ValueError(f"{pattern!r}: the lock's patterns are anchored (/...) and never negated")
    out, i, body = [], 0, pattern[1:]
    while i < len(body):
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif body[i] == "*":
            out.append("[^/]*")
            i += 1
        elif body[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(body[i]))
            i += 1
    return re.compile("".join(out))


def matches(patterns: Iterable[str], path: str) -> bool:
    """Whether a relative path (a/b.yml) is one a sparse checkout with these patterns holds."""
    return any(_regex(p).fullmatch(path) for p in patterns)


def plan_lines(lock: Lock, target: Path) -> list[str]:
    """What a rebuild fetches: per upstream, the repository, the commit, where it goes and the paths."""
    lines = []
    for source in lock.sources:
        for up in source.upstreams:
            lines.append(f"{up.url} {up.commit} -> {target / source.name / up.under}")
            lines += [f"    {p}" for p in up.paths]
            lines += [f"    {b.objects} => {b.path} ({b.count} objects)" for b in up.bundles]
    return lines


def assemble(files: Sequence[Path], bundle: Bundle) -> bytes:
    """The bundle of every object of the per-object files, sorted by (type, id), as the snapshot writes it."""
    objects = [obj for path in files for obj in json.loads(path.read_bytes()).get("objects", ())]
    objects.sort(key=lambda o: (o["type"], o["id"]))
    data: dict[str, object] = {"type": "bundle", "id": bundle.id, "objects": objects}
    if bundle.spec_version:
        data["spec_version"] = bundle.spec_version
    return json.dumps(data, indent=4, ensure_ascii=False).encode("utf-8")


def place(checkout_root: Path, upstream: Upstream, dest: Path) -> int:
    """Copy the checkout's kept files into dest and write its bundles; the number of files placed."""
    placed = 0
    inputs: dict[str, list[Path]] = {b.objects: [] for b in upstream.bundles}
    for dirpath, dirnames, filenames in os.walk(checkout_root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            path = Path(dirpath, name)
            rel = path.relative_to(checkout_root).as_posix()
            for pattern, found in inputs.items():
                if matches([pattern], rel):
                    found.append(path)
            if matches(upstream.paths, rel):
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, dest / rel)
                placed += 1
    for bundle in upstream.bundles:
        data = assemble(inputs[bundle.objects], bundle)
        digest = hashlib.sha256(data).hexdigest()
        if digest != bundle.sha256:
            log.warning("%s: assembled bundle differs from the snapshot's (sha256 %s)", bundle.path, digest)
        (dest / bundle.path).parent.mkdir(parents=True, exist_ok=True)
        (dest / bundle.path).write_bytes(data)
        placed += 1
    return placed


def manifest(lock: Lock) -> dict[str, object]:
    """The MANIFEST.json of the rebuilt snapshot: what the mirrors read (branch, commit and its date)."""
    sources = {}
    for source in lock.sources:
        first = source.upstreams[0]
        sources[source.name] = {
            "folder": f"{source.name}/",
            "repo": first.repo,
            "url": first.url.removesuffix(".git"),
            "branch": first.branch,
            "commit": first.commit,
            "commit_date": first.commit_date,
            "files": source.files,
            "upstreams": [
                {
                    "repo": u.repo,
                    "url": u.url.removesuffix(".git"),
                    "branch": u.branch,
                    "commit": u.commit,
                    "commit_date": u.commit_date,
                    "placed_under": f"{source.name}/{u.under}",
                }
                for u in source.upstreams
            ],
        }
    return {"description": "Rebuilt by tests/upstream_data.py from tests/upstream.lock.yaml.", "sources": sources}


def rebuild(lock: Lock, target: Path, names: Sequence[str] = ()) -> None:
    """Fetch every (or the named) source into `<target>.partial`, then rename it to target."""
    partial = target.with_name(target.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    policy = UrlPolicy()
    for source in lock.sources:
        if names and source.name not in names:
            continue
        folder = partial / source.name
        if folder.is_dir() and (folder / ".complete").is_file():
            log.info("%s: already fetched", source.name)
            continue
        shutil.rmtree(folder, ignore_errors=True)
        placed = 0
        for up in source.upstreams:
            with tempfile.TemporaryDirectory(prefix=f"secrag-{source.name}-") as work:
                log.info("%s: %s at %s", source.name, up.repo, up.commit[:12])
                checkout(up.url, up.commit, up.sparse, Path(work) / "checkout", FETCH_TIMEOUT, policy)
                placed += place(Path(work) / "checkout", up, folder / up.under)
        if placed != source.files:
            log.warning("%s: %d files, the snapshot has %d", source.name, placed, source.files)
        (folder / ".complete").write_text(str(placed), encoding="utf-8")
    if names:
        log.info("fetched %s into %s (rerun without --source to finish)", ", ".join(names), partial)
        return
    for marker in partial.glob("*/.complete"):
        marker.unlink()
    (partial / "MANIFEST.json").write_text(json.dumps(manifest(lock), indent=1) + "\n", encoding="utf-8")
    partial.rename(target)
    log.info("the upstream snapshot is ready in %s", target)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=Path, default=TARGET, help="the snapshot folder (%(default)s)")
    parser.add_argument("--lock", type=Path, default=LOCK, help="the lock file (%(default)s)")
    parser.add_argument("--plan", action="store_true", help="print what would be fetched; fetch nothing")
    parser.add_argument("--source", action="append", default=[], help="only this source (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="test-data: %(message)s")
    lock = load_lock(args.lock)
    unknown = set(args.source) - {s.name for s in lock.sources}
    if unknown:
        parser.error(f"no source {', '.join(sorted(unknown))} in {args.lock}")
    target = args.target.resolve()
    if args.plan:
        sys.stdout.write("\n".join(plan_lines(lock, target)) + "\n")
        return 0
    if (target / "MANIFEST.json").is_file():
        log.info("%s is already there; remove it to rebuild it", target)
        return 0
    try:
        rebuild(lock, target, args.source)
    except FetchError as exc:
        log.error("%s", exc)
        log.error("what was fetched stays in %s.partial; rerun to go on", target)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
