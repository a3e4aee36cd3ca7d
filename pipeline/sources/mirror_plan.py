"""What a snapshot folder's sources need mirrored: branch, tracking (commit, release, feed), the
release repository or feed file, and the commit date, from the source registry or else the snapshot's
MANIFEST.json."""

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


def plan(snapshot: Path, specs: Mapping[str, SourceSpec], sources: Iterable[str] | None) -> list[MirrorSource]:
    """What to mirror: the given sources (default: every snapshot folder), described by spec or manifest."""
    manifest = _manifest(snapshot)
    names = (
        sorted(sources)
        if sources is not None
        else sorted(p.name for p in snapshot.iterdir() if p.is_dir() and not p.name.startswith("."))
    )
    planned = []
    for name in names:
        if not (snapshot / name).is_dir():
            raise ConfigError(f"no folder {name!r} in the upstream snapshot {snapshot}")
        info = manifest.get(name, {})
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
            )
        )
    return planned
