"""Changes to a built mirror, as if upstream had moved on: for tests and benches, never production."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import PurePosixPath

from pipeline.sources.git_fetch import run_git
from pipeline.sources.mirror import GIT_TIMEOUT, Mirror, mirror_env, tag_release
from secrag.errors import ConfigError


def _checked_rel(rel: str) -> str:
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts or ".." in path.parts or any(c in rel for c in "\t\n\r\0"):
        raise ConfigError(f"mirror change path {rel!r} must be relative and stay inside the repository")
    return path.as_posix()


def _keep_head(mirror: Mirror, name: str, commit: str) -> None:
    """The mirror's build state names the new head, so the next build keeps the change."""
    state = mirror.root / "state" / f"{name}.json"
    if state.is_file():
        recorded = json.loads(state.read_text(encoding="utf-8"))
        state.write_text(json.dumps({**recorded, "head": commit}), encoding="utf-8")


def add_commit(
    mirror: Mirror,
    source: str,
    changes: Mapping[str, bytes | None],
    message: str = "upstream change",
    *,
    keep: bool = False,
    moves: Mapping[str, str] | None = None,
) -> str:
    """Commit changes (relpath -> new bytes, or None to delete) on the source's branch; the new SHA.

    `moves` renames folders (old -> new), every file under them kept as it is (an upstream's layout moving).

    Release sources get a new tag and releases/latest; a changed feed file is republished too. A mirror
    that no longer matches its snapshot is rebuilt by the next build_mirror, unless `keep` records the
    new head as built (the production topology's runs each build the mirror again).
    """
    checked = {_checked_rel(rel): data for rel, data in changes.items()}
    info = mirror.sources[source]
    git_dir = mirror.git_dir(source)
    index = git_dir / "secrag-change-index"
    ref = f"refs/heads/{info.branch}"
    parent = mirror.head(source)
    base = mirror_env(GIT_DIR=str(git_dir), GIT_INDEX_FILE=str(index))
    stamp = int(run_git(["show", "-s", "--format=%ct", parent], timeout=60, env=base).strip()) + 3600
    env = {**base, "GIT_AUTHOR_DATE": f"{stamp} +0000", "GIT_COMMITTER_DATE": f"{stamp} +0000"}

    def git(*args: str, stdin: bytes | None = None) -> str:
        return run_git(args, timeout=GIT_TIMEOUT, env=env, stdin=stdin, what=f"mirror change {source}").strip()

    git("read-tree", parent)
    entries = []  # `update-index --index-info` lines; mode 0 removes (a bare repo has no work tree)
    for old, new in (moves or {}).items():
        old, new = _checked_rel(old), _checked_rel(new)
        for line in git("ls-tree", "-r", parent, "--", f"{old}/").splitlines():
            meta, rel = line.split("\t", 1)
            mode, _type, blob = meta.split()
            entries.append(f"0 {'0' * 40}\t{rel}\n")
            entries.append(f"{mode} {blob}\t{new}/{rel.removeprefix(old + '/')}\n")
    for rel, data in sorted(checked.items()):
        if data is None:
            entries.append(f"0 {'0' * 40}\t{rel}\n")
        else:
            blob = git("hash-object", "-w", "--stdin", stdin=data)
            entries.append(f"100644 {blob}\t{rel}\n")
    git("update-index", "--index-info", stdin="".join(entries).encode())
    commit = git("commit-tree", git("write-tree"), "-p", parent, "-m", message)
    git("update-ref", ref, commit, parent)
    index.unlink(missing_ok=True)
    if keep:
        _keep_head(mirror, info.mirror_name, commit)
    if info.tracking == "release" and info.github:
        tag_release(git_dir, mirror.root, info, commit, f"{stamp} +0000")
    if info.feed_path and info.feed_path in checked:
        feed = mirror.root / "feeds" / source / info.feed_path
        data = checked[info.feed_path]
        if data is None:
            feed.unlink(missing_ok=True)
        else:
            feed.parent.mkdir(parents=True, exist_ok=True)
            feed.write_bytes(data)
    return commit
