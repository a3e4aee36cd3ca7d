"""Local upstream mirrors built from a snapshot folder: bare git repos, release JSON and feed files
(what each source needs mirrored: pipeline/sources/mirror_plan.py)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from secrag.errors import ConfigError, FetchError
from secrag.files.safe_files import UnsafeFile, read_capped
from secrag.net.url_policy import file_path

from .git_fetch import git_env, run_git
from .mirror_plan import MirrorSource, plan
from .registry import SourceSpec

log = logging.getLogger(__name__)

FORMAT = "secrag-mirror/1"  # bump to rebuild every mirror after a layout change
GIT_TIMEOUT = 900.0
_IDENTITY = {"NAME": "secrag mirror", "EMAIL": "mirror@secrag.invalid"}


@dataclass(frozen=True)
class Mirror:
    """A built mirror: per-source git URLs and feed URLs, and a file:// releases API base."""

    root: Path
    repos: Mapping[str, str]
    feeds: Mapping[str, str]
    api_base: str
    sources: Mapping[str, MirrorSource]

    def git_dir(self, source: str) -> Path:
        return self.root / "git" / f"{self.sources[source].mirror_name}.git"

    def head(self, source: str) -> str:
        """Current commit of the source's mirrored branch."""
        ref = f"refs/heads/{self.sources[source].branch}"
        return run_git(["--git-dir", str(self.git_dir(source)), "rev-parse", ref], timeout=60, env=mirror_env()).strip()

    def feed_path(self, source: str) -> Path:
        return file_path(self.feeds[source])

    def rev_parse(self, source: str, rev: str) -> str:
        """Full SHA of the commit rev (a SHA, tag or branch) names in the source's mirror."""
        git_dir = str(self.git_dir(source))
        return run_git(
            ["--git-dir", git_dir, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"],
            timeout=60,
            env=mirror_env(),
            what=f"{source}: no commit {rev!r} in the mirror",
        ).strip()

    def latest_release(self, source: str) -> str:
        """Tag name of the source's latest release, as the mirror's releases API file states it."""
        info = self.sources[source]
        latest = self.root / "api" / "repos" / info.github / "releases" / "latest"
        try:
            tag = json.loads(read_capped(latest, 1024 * 1024)).get("tag_name")
        except (UnsafeFile, ValueError, AttributeError) as exc:
            raise FetchError(f"{source}: the mirror has no readable latest release ({exc})") from exc
        if not isinstance(tag, str) or not tag:
            raise FetchError(f"{source}: the mirror's latest release names no tag")
        return tag


def mirror_env(**extra: str) -> dict[str, str]:
    """The environment for git on mirrors: no user or system config, a fixed identity."""
    env = git_env(extra={"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull})
    for role in ("AUTHOR", "COMMITTER"):
        for key, value in _IDENTITY.items():
            env[f"GIT_{role}_{key}"] = value
    env.update(extra)
    return env


def _listing_key(folder: Path, source: MirrorSource) -> str:
    digest = hashlib.sha256(f"{FORMAT}\n{source!r}\n".encode())
    entries = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for fn in filenames:
            path = os.path.join(dirpath, fn)
            st = os.lstat(path)
            entries.append(f"{os.path.relpath(path, folder)}\0{st.st_size}\0{st.st_mtime_ns}")
    for entry in sorted(entries):
        digest.update(entry.encode("utf-8", "surrogateescape") + b"\n")
    return digest.hexdigest()


def tag_release(git_dir: Path, root: Path, source: MirrorSource, commit: str, date: str) -> None:
    """Tag commit as a release and write the mirror's releases/latest file for it."""
    tag = f"mirror-{commit[:12]}"
    run_git(
        ["--git-dir", str(git_dir), "tag", "-f", "-a", "-m", f"mirror release {tag}", tag, commit],
        timeout=GIT_TIMEOUT,
        env=mirror_env(GIT_COMMITTER_DATE=date),
        what=f"mirror tag {source.name}",
    )
    api = root / "api" / "repos" / source.github / "releases" / "latest"
    api.parent.mkdir(parents=True, exist_ok=True)
    api.write_text(json.dumps({"tag_name": tag, "name": tag, "target_commitish": source.branch}), encoding="utf-8")


def _commit_folder(folder: Path, git_dir: Path, source: MirrorSource) -> str:
    index = git_dir / "secrag-index"
    env = mirror_env(
        GIT_DIR=str(git_dir),
        GIT_WORK_TREE=str(folder),
        GIT_INDEX_FILE=str(index),
        GIT_AUTHOR_DATE=source.date,
        GIT_COMMITTER_DATE=source.date,
    )
    what = f"mirror {source.name}"

    def git(*args: str) -> str:
        return run_git(args, timeout=GIT_TIMEOUT, cwd=folder, env=env, what=what).strip()

    git("add", "--all", "--force", ".")
    tree = git("write-tree")
    commit = git("commit-tree", tree, "-m", f"snapshot of {source.name}")
    git("update-ref", f"refs/heads/{source.branch}", commit)
    git("symbolic-ref", "HEAD", f"refs/heads/{source.branch}")
    index.unlink(missing_ok=True)
    return commit


def _build_one(snapshot: Path, root: Path, source: MirrorSource) -> None:
    folder = snapshot / source.name
    final = root / "git" / f"{source.name}.git"
    state_file = root / "state" / f"{source.name}.json"
    key = _listing_key(folder, source)
    if final.is_dir() and state_file.is_file():
        state = json.loads(state_file.read_text(encoding="utf-8"))
        try:
            head = run_git(
                ["--git-dir", str(final), "rev-parse", f"refs/heads/{source.branch}"], timeout=60, env=mirror_env()
            ).strip()
        except FetchError:  # an unreadable mirror is simply rebuilt
            head = ""
        if state.get("key") == key and state.get("head") == head:
            log.debug("mirror up to date", extra={"source": source.name})
            return
    tmp = root / "git" / f".{source.name}.git.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    run_git(["init", "-q", "--bare", str(tmp)], timeout=GIT_TIMEOUT, env=mirror_env(), what=f"mirror {source.name}")
    for setting in ("uploadpack.allowFilter", "uploadpack.allowAnySHA1InWant"):
        run_git(["--git-dir", str(tmp), "config", setting, "true"], timeout=60, env=mirror_env())
    commit = _commit_folder(folder, tmp, source)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    if source.tracking == "release" and source.github:
        tag_release(final, root, source, commit, source.date)
    if source.feed_path:
        _copy_feed(folder / source.feed_path, root, source)
    state_file.parent.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps({"key": key, "head": commit}), encoding="utf-8")


def _copy_feed(src: Path, root: Path, source: MirrorSource) -> None:
    dest = root / "feeds" / source.name / source.feed_path
    if not src.is_file():
        log.warning("snapshot lacks the feed file", extra={"source": source.name, "path": str(src)})
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two processes building one mirror wait for each other
        yield


def _describe(root: Path, planned: list[MirrorSource]) -> Mirror:
    feeds = {}
    for s in planned:
        path = root / "feeds" / s.name / s.feed_path
        if s.feed_path and path.is_file():
            feeds[s.name] = path.as_uri()
    return Mirror(
        root=root,
        repos=MappingProxyType({s.name: (root / "git" / f"{s.mirror_name}.git").as_uri() for s in planned}),
        feeds=MappingProxyType(feeds),
        api_base=(root / "api").as_uri(),
        sources=MappingProxyType({s.name: s for s in planned}),
    )


def build_mirror(
    snapshot: Path,
    target: Path,
    specs: Mapping[str, SourceSpec] | None = None,
    sources: Iterable[str] | None = None,
    workers: int | None = None,
) -> Mirror:
    """Build (or reuse, when the snapshot is unchanged) mirrors of the snapshot's source folders."""
    snapshot, root = snapshot.resolve(), target.resolve()
    if not snapshot.is_dir():
        raise ConfigError(f"upstream snapshot {snapshot} is not a folder", hint="check SECRAG_UPSTREAM_MIRROR")
    planned = plan(snapshot, specs or {}, sources)
    started = time.monotonic()
    with _locked(root):
        with ThreadPoolExecutor(max_workers=workers or min(4, os.cpu_count() or 1)) as pool:
            # A source sharing another's folder reads that source's mirror (planned with it).
            list(pool.map(lambda s: _build_one(snapshot, root, s), [s for s in planned if not s.folder]))
    log.info(
        "upstream mirror ready",
        extra={"mirror": str(root), "sources": len(planned), "seconds": round(time.monotonic() - started, 2)},
    )
    return _describe(root, planned)
