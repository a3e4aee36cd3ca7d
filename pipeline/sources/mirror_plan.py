"""What a snapshot folder's sources need mirrored: branch, tracking (commit, release, feed), the
release repository or feed file, and the commit date, from the source registry or else the snapshot's
MANIFEST.json. A source without a folder of its own reads the folder of a source on the same repository
and branch (mitre_attack_procedures reads mitre_attack's): one mirror, one release, one version."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from secrag.errors import ConfigError

from .registry import SourceSpec

_EPOCH = 946684800  # 2000-01-01, when the snapshot manifest names no commit date


@dataclass(frozen=True)
class MirrorSource:
    """How one source is mirrored: branch, and what else its tracking needs."""

    name: str
    branch: str
    tracking: str = "commit"
    github: str = ""
    feed_path: str = ""
    date: str = f"{_EPOCH} +0000"
    folder: str = ""  # the snapshot folder (and mirror) it reads: its own name unless it shares one

    @property
    def mirror_name(self) -> str:
        return self.folder or self.name


def _manifest(snapshot: Path) -> dict[str, dict[str, object]]:
    path = snapshot / "MANIFEST.json"
    if not path.is_file():
        return {}
    return dict(json.loads(path.read_text(encoding="utf-8")).get("sources", {}))


def _git_date(iso: object) -> str:
    from datetime import datetime

    try:
        return f"{int(datetime.fromisoformat(str(iso)).timestamp())} +0000"
    except ValueError:
        return f"{_EPOCH} +0000"


def snapshot_folder(name: str, specs: Mapping[str, SourceSpec], snapshot: Path) -> str | None:
    """The snapshot folder a source reads: its own, else that of a source on the same repository and
    branch (the first by name); None when neither exists."""
    if (snapshot / name).is_dir():
        return name
    spec = specs.get(name)
    if spec is None or not spec.repo:
        return None
    return next(
        (
            other.name
            for other in sorted(specs.values(), key=lambda s: s.name)
            if other.name != name
            and (other.repo, other.branch) == (spec.repo, spec.branch)
            and (snapshot / other.name).is_dir()
        ),
        None,
    )


def plan(snapshot: Path, specs: Mapping[str, SourceSpec], sources: Iterable[str] | None) -> list[MirrorSource]:
    """What to mirror: the given sources (default: every snapshot folder and the sources sharing one),
    described by spec or manifest; a source that shares a folder brings that folder's source along."""
    manifest = _manifest(snapshot)
    if sources is None:
        folders = sorted(p.name for p in snapshot.iterdir() if p.is_dir() and not p.name.startswith("."))
        sharing = [n for n in specs if n not in folders and snapshot_folder(n, specs, snapshot)]
        sources = [*folders, *sharing]
    names = set(sources)
    for name in list(names):
        folder = snapshot_folder(name, specs, snapshot)
        if folder is None:
            raise ConfigError(f"no folder {name!r} in the upstream snapshot {snapshot}")
        names.add(folder)
    planned = []
    for name in sorted(names):
        folder = str(snapshot_folder(name, specs, snapshot))
        info = manifest.get(folder, {})
        spec = specs.get(name)
        if spec is None:
            planned.append(
                MirrorSource(name, str(info.get("branch") or "main"), date=_git_date(info.get("commit_date")))
            )
            continue
        planned.append(
            MirrorSource(
                name,
                spec.branch,
                spec.tracking,
                github=spec.github if spec.tracking == "release" else "",
                feed_path=spec.paths[0] if spec.tracking == "feed" and spec.paths else "",
                date=_git_date(info.get("commit_date")),
                folder="" if folder == name else folder,
            )
        )
    return planned
