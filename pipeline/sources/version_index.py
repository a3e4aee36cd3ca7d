"""A release index in a source's repository (ATT&CK's `index.json`): the newest version it lists and, for each of
the source's paths, the versioned file it names, read from one commit with the download limits and URL policy."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from secrag.errors import FetchError, FetchTooLarge
from secrag.files.safe_files import FileGone, FileTooLarge, UnsafeFile, read_capped

from .git_fetch import checkout
from .http_fetch import parse_json
from .registry import SourceSpec
from .upstream import UpstreamConfig

RAW_HOST = "raw.githubusercontent.com"  # where index.json's URLs point: files of the repository, by branch
TAG_PREFIX = "v"  # ATT&CK tags the release of version 18.1 `v18.1`: the version label either probe records
_VERSION = re.compile(r"^\d{1,4}(?:\.\d{1,4}){0,3}$")


@dataclass(frozen=True)
class IndexedRelease:
    """The newest version the index lists for the source's paths and the repository file it names for each."""

    version: str  # as the index states it: 19.0
    files: Mapping[str, str]  # registry path -> the versioned file in the repository

    @property
    def label(self) -> str:
        return TAG_PREFIX + self.version


def versioned(path: str, version: str) -> str:
    """enterprise-attack/enterprise-attack.json at 19.0: enterprise-attack/enterprise-attack-19.0.json."""
    rel = PurePosixPath(path)
    return rel.with_name(f"{rel.stem}-{version}{rel.suffix}").as_posix()


def index_url(spec: SourceSpec, commit: str) -> str:
    """Where the index read at commit is on the web (what the probe records as its URL)."""
    return f"https://{RAW_HOST}/{spec.github}/{commit}/{spec.version_index}"


def from_index(spec: SourceSpec, url: str) -> bool:
    """Whether a probe's URL says it read the version from the source's index (not from the release tag)."""
    return bool(spec.version_index) and url.startswith(f"https://{RAW_HOST}/") and url.endswith(spec.version_index)


def _repository_file(spec: SourceSpec, url: object, where: str) -> str:
    """The repository path a version's URL names; it must be a file of this repository on the tracked branch."""
    parts = urlsplit(str(url))
    segments = parts.path.split("/")[1:]
    if parts.scheme != "https" or parts.hostname != RAW_HOST or len(segments) < 4:
        raise FetchError(f"{where}: {url!r} is not a file URL on {RAW_HOST}")
    owner_repo, ref, rel = "/".join(segments[:2]), segments[2], PurePosixPath(*segments[3:])
    if owner_repo.casefold() != spec.github.casefold() or ref != spec.branch:
        raise FetchError(f"{where}: {url!r} names a file outside {spec.github} on branch {spec.branch}")
    if ".." in rel.parts or "" in segments[3:] or parts.query or parts.fragment:
        raise FetchError(f"{where}: {url!r} is not a plain file path")
    return rel.as_posix()


def _newest(collection: Any, where: str) -> tuple[str, object]:  # noqa: ANN401 - parsed JSON
    versions = collection.get("versions") if isinstance(collection, dict) else None
    if not isinstance(versions, list) or not versions:
        raise FetchError(f"{where}: a collection lists no versions")
    listed = []
    for entry in versions:
        version = entry.get("version") if isinstance(entry, dict) else None
        if not isinstance(version, str):
            raise FetchError(f"{where}: a collection lists a version that is not a string: {version!r}")
        if _VERSION.match(version):  # a pre-release (Mobile's 11.2-beta) is never the newest release
            listed.append((tuple(int(n) for n in version.split(".")), version, entry.get("url")))
    if not listed:
        raise FetchError(f"{where}: a collection lists no released version (dotted numbers)")
    _, version, url = max(listed, key=lambda item: item[0])
    return version, url


def indexed_release(data: bytes, spec: SourceSpec, where: str) -> IndexedRelease:
    """The newest version the index lists for each of the spec's paths, which must agree."""
    index = parse_json(data, where)
    collections = index.get("collections") if isinstance(index, dict) else None
    if not isinstance(collections, list) or not collections:
        raise FetchError(f"{where}: no `collections` list")
    newest = [_newest(collection, where) for collection in collections]
    named = {_repository_file(spec, url, where): version for version, url in newest}
    files: dict[str, str] = {}
    versions: dict[str, str] = {}
    for path in spec.paths:
        match = [(rel, version) for rel, version in named.items() if rel == versioned(path, version)]
        if not match:
            raise FetchError(
                f"{where}: no collection's newest version is a file of {path}",
                hint="the index names <folder>/<name>-<version>.json for each bundle the source reads",
            )
        files[path], versions[path] = match[0]
    if len(set(versions.values())) != 1:
        raise FetchError(f"{where}: the newest versions of the source's bundles differ: {versions}")
    return IndexedRelease(next(iter(versions.values())), files)


def read_index(repo_url: str, commit: str, spec: SourceSpec, cfg: UpstreamConfig, timeout: float) -> bytes | None:
    """The index file at commit (a sparse checkout of it alone), at most cfg.limits.max_bytes; None when the
    commit has none."""
    with tempfile.TemporaryDirectory(prefix="secrag-index-") as tmp:
        root = Path(tmp) / "checkout"
        checkout(repo_url, commit, [spec.version_index], root, timeout, cfg.policy)
        try:
            return read_capped(root / spec.version_index, cfg.limits.max_bytes, within=root)
        except FileGone:
            return None
        except FileTooLarge as exc:
            raise FetchTooLarge(f"{spec.name}: {spec.version_index} {exc.reason}") from exc
        except UnsafeFile as exc:
            raise FetchError(f"{spec.name}: {spec.version_index} {exc.reason}") from exc


def fetch_indexed(spec: SourceSpec, repo_url: str, label: str, commit: str, workdir: Path, cfg: UpstreamConfig) -> None:
    """The versioned files the index at commit names for release `label`, checked out under workdir at the
    source's own paths (enterprise-attack-19.0.json read as enterprise-attack/enterprise-attack.json)."""
    version = label.removeprefix(TAG_PREFIX)
    wanted = [spec.version_index, *(versioned(path, version) for path in spec.paths)]
    checkout(repo_url, commit, wanted, workdir, cfg.fetch_timeout, cfg.policy)
    where = f"{spec.name}: {spec.version_index} at {commit[:12]}"
    index = workdir / spec.version_index
    try:
        release = indexed_release(read_capped(index, cfg.limits.max_bytes, within=workdir), spec, where)
    except UnsafeFile as exc:
        raise FetchError(f"{where}: {exc.reason}") from exc
    if release.label != label:
        raise FetchError(f"{where}: lists {release.label} as the newest release, not the probed {label}")
    for path, rel in release.files.items():
        source = workdir / rel
        if not source.is_file() or source.is_symlink():
            raise FetchError(f"{where}: names {rel} for {label}, which that commit does not hold")
        target = workdir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        source.replace(target)
    index.unlink()
