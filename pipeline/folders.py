"""User-document folders: YAML configuration, a safe scan by content hash, and records per file (the
text of each file format: pipeline/folder_formats.py).

Pure: no database and no Dagster. A folder is one source (source name = folder name); each
supported file is one record with doc id `<folder>:<relative path>`.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from secrag.access import AccessField, access_problem
from secrag.enrichment import technique_mentions
from secrag.errors import ConfigError, FetchError, ParseError
from secrag.files.config_files import ConfigModel, FieldError, Loc, located, read_mapping, validate
from secrag.files.safe_files import GONE, FileGone, FileUnreadable, UnsafeFile, read_capped
from secrag.net import media_types

from .folder_formats import extract
from .sources.records import Record, Skipped

SUFFIXES = frozenset({".txt", ".md", ".json", ".jsonl", ".yaml", ".yml", ".html", ".htm", ".pdf"})
DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,62}$")  # a source name and a Dagster name
INGESTED_PREFIX = "ingested_"  # the sources of one-time documents (pipeline/ingested.py)


class FolderUnreadable(FetchError):
    """The folder, or a directory in it, could not be listed: the scan is incomplete and nothing publishes
    (a file missing from it may only be unlisted). `paths`: relative path ("." the folder) -> reason."""

    def __init__(self, name: str, paths: Mapping[str, str]) -> None:
        listed = ", ".join(f"{p} ({r})" for p, r in sorted(paths.items())[:10])
        more = f" and {len(paths) - 10} more" if len(paths) > 10 else ""
        super().__init__(
            f"folder {name}: {len(paths)} director{'y' if len(paths) == 1 else 'ies'} could not be "
            f"listed, nothing is published: {listed}{more}"
        )
        self.paths = dict(sorted(paths.items()))


@dataclass(frozen=True)
class FolderSpec:
    """One configured folder: where it is and who may read its documents (no tenant: public, as the file
    said). `error`, when set, is the entry's configuration error: its runs fail with it, nothing publishes."""

    name: str
    path: Path
    tenant: str | None = None
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    description: str = ""
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    error: str = ""


@dataclass(frozen=True)
class FileEntry:
    """What the scan knows of one file; `sha256` decides whether it changed."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class Unreadable(Skipped):
    """A file that is there but could not be read (permissions, an I/O error): its document stays."""


@dataclass(frozen=True)
class FolderScan:
    """Supported files by relative path, the ones refused (symlinks, too large, escaping, not regular), and
    the ones there that could not be read (their documents stay as they were)."""

    files: Mapping[str, FileEntry]
    refused: tuple[Skipped, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()

    def digest(self) -> str:
        """One hash of every (path, content hash) and unreadable path: equal scans, equal digests."""
        lines = [f"{rel}\0{entry.sha256}" for rel, entry in sorted(self.files.items())]
        lines += sorted(f"{s.path}\0unreadable" for s in self.unreadable)  # none: the digest of before
        return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class FolderRead:
    """Records of a folder, the files that could not become one, and of those the ones whose documents stay
    (`kept`: relative paths of files that are there but could not be read)."""

    records: tuple[Record, ...]
    skipped: tuple[Skipped, ...]
    files_seen: int
    scan: FolderScan = field(default_factory=lambda: FolderScan({}))

    @property
    def kept(self) -> tuple[str, ...]:
        return tuple(sorted(s.path for s in self.skipped if isinstance(s, Unreadable)))


class Acl(ConfigModel):
    """Who may read a folder's documents besides its tenant's API keys."""

    users: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    groups: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)


class FolderEntry(ConfigModel):
    """One item of `folders:` as written."""

    name: str
    path: str = Field(min_length=1)
    tenant: str | None = Field(default=None, min_length=1)
    public: bool = False
    acl: Acl | None = None
    users: list[Annotated[str, Field(min_length=1)]] | None = None  # older files: the acl's lists at the top
    groups: list[Annotated[str, Field(min_length=1)]] | None = None
    description: str = ""
    max_file_mib: float = Field(default=DEFAULT_MAX_FILE_BYTES / 1024 / 1024, gt=0)

    def names(self, field: Literal["users", "groups"]) -> tuple[str, ...]:
        """The acl's list, else the one at the top (older files)."""
        if self.acl is not None and field in self.acl.model_fields_set:
            return tuple(getattr(self.acl, field))
        return tuple(getattr(self, field) or ())

    def access_error(self) -> tuple[Loc, str] | None:
        """Where (relative to the entry) and why its access is not one clear choice (secrag/access.py)."""
        users, groups = self.names("users"), self.names("groups")
        problem = access_problem(tenant=self.tenant, users=users, groups=groups, public=self.public)
        if problem is None:
            return None
        return self._loc(problem.field), f"folder {self.name} is not published: {problem.message}"

    def _loc(self, field: AccessField) -> Loc:
        if self.acl is not None and field in self.acl.model_fields_set:
            return ("acl", field)
        return (field,)  # tenant, public, or an older file's list at the top

    @field_validator("name")
    @classmethod
    def _source_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(f"{name!r} must match {_NAME.pattern} (it becomes the source name)")
        if name.startswith(INGESTED_PREFIX):
            raise ValueError(f"{name!r} starts with {INGESTED_PREFIX!r}, kept for one-time documents (`secrag ingest`)")
        return name


class FoldersFile(ConfigModel):
    """The folders file (folders.example.yaml); validation context `reserved`: the online sources' names."""

    folders: list[FolderEntry] | None = None

    @model_validator(mode="after")
    def _unique_names(self, info: ValidationInfo) -> FoldersFile:
        taken: set[str] = set((info.context or {}).get("reserved", ()))
        for i, item in enumerate(self.folders or ()):
            if item.name in taken:
                raise FieldError(("folders", i, "name"), f"{item.name!r} is already used by another source or folder")
            taken.add(item.name)
        return self

    def specs(self, base: Path, describe: Callable[[Loc, str], str]) -> list[FolderSpec]:
        """Folder specs; relative paths are relative to `base` (the folders file's directory). An entry
        whose access is unclear becomes a refused spec, its error worded by `describe(loc, message)`."""
        specs = []
        for i, item in enumerate(self.folders or ()):
            problem = item.access_error()
            specs.append(
                FolderSpec(
                    name=item.name,
                    path=(base / Path(item.path).expanduser()).resolve(),
                    tenant=item.tenant,
                    users=item.names("users"),
                    groups=item.names("groups"),
                    description=item.description,
                    max_file_bytes=int(item.max_file_mib * 1024 * 1024),
                    error=describe(("folders", i, *problem[0]), problem[1]) if problem else "",
                )
            )
        return specs


def load_folders(path: Path | None, reserved: frozenset[str] = frozenset()) -> list[FolderSpec]:
    """The folders configured in a YAML file; none when the file is absent.

    A malformed file is a ConfigError naming file:line:field and no folder loads. An entry that does
    not say who sees it is refused alone (FolderSpec.error, worded the same way): the other folders
    keep publishing, and its asset stays in the graph so that each of its runs fails with the error.
    """
    if path is None or not path.is_file():
        return []
    data, node = read_mapping(path)
    config = validate(path, node, data, FoldersFile, context={"reserved": reserved})
    return config.specs(path.parent.resolve(), lambda loc, message: located(path, node, loc, message))


def _entry(
    path: Path, rel: str, spec: FolderSpec, previous: Mapping[str, FileEntry] | None
) -> FileEntry | Skipped | None:
    """The scan entry of one file, or why it is refused or unreadable; None when it is gone since its
    directory was listed. A FIFO, device or socket is refused from its lstat, never opened."""
    try:
        st = path.lstat()
    except OSError as exc:
        return None if exc.errno in GONE else Unreadable(rel, f"unreadable: {exc.strerror or exc}")
    if stat.S_ISLNK(st.st_mode):
        return Skipped(rel, "symlinks are refused")
    if not stat.S_ISREG(st.st_mode):
        return Skipped(rel, "not a regular file (FIFO, device or socket)")
    if st.st_size > spec.max_file_bytes:
        return Skipped(rel, f"file of {st.st_size} bytes exceeds the {spec.max_file_bytes}-byte limit")
    old = (previous or {}).get(rel)
    if old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns:
        return old
    data = _read(path, rel, spec)
    if data is None or isinstance(data, Skipped):
        return data
    return FileEntry(st.st_size, st.st_mtime_ns, hashlib.sha256(data).hexdigest())


def _read(path: Path, rel: str, spec: FolderSpec) -> bytes | Skipped | None:
    """The bytes of one file, or why not (Unreadable: there but not readable), None when it is gone."""
    try:
        return read_capped(path, spec.max_file_bytes, within=spec.path)
    except FileGone:
        return None
    except FileUnreadable as exc:
        return Unreadable(rel, exc.reason)
    except UnsafeFile as exc:  # swapped for a symlink or a FIFO, or grown past the cap, since its lstat
        return Skipped(rel, exc.reason)
    except OSError as exc:  # an I/O error while reading
        return None if exc.errno in GONE else Unreadable(rel, f"unreadable: {exc.strerror or exc}")


def _listed_root(spec: FolderSpec) -> Path:
    """The folder's directory; ConfigError when there is none, FolderUnreadable when it cannot be looked at."""
    try:
        if stat.S_ISDIR(os.stat(spec.path).st_mode):
            return spec.path
    except OSError as exc:
        if exc.errno not in GONE:
            raise FolderUnreadable(spec.name, {".": exc.strerror or str(exc)}) from exc
    raise ConfigError(f"folder {spec.name}: its directory does not exist (or is not a directory)")


def scan_folder(spec: FolderSpec, previous: Mapping[str, FileEntry] | None = None) -> FolderScan:
    """Hash every supported file; a file whose size and mtime are unchanged keeps its old hash.

    A missing folder is a ConfigError and a folder or directory in it that cannot be listed (a stale mount,
    an I/O error, a permission change, a directory removed or replaced while it is walked) is
    FolderUnreadable: the scan is incomplete, so what the folder served stays served. A file that is there
    but cannot be read is `unreadable` (its document stays), one gone since it was listed is left out (its
    document goes), and every other per-file problem (symlink, FIFO, device, socket, oversized) is refused
    with its reason.
    """
    root = _listed_root(spec)
    files: dict[str, FileEntry] = {}
    refused: list[Skipped] = []
    unreadable: list[Unreadable] = []
    unlisted: dict[str, str] = {}

    def unlistable(exc: OSError) -> None:
        where = Path(exc.filename).relative_to(root).as_posix() if exc.filename else "."
        unlisted[where] = exc.strerror or str(exc)

    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=unlistable):
        here = Path(dirpath)
        for d in list(dirnames):
            if (here / d).is_symlink():
                dirnames.remove(d)
                refused.append(Skipped((here / d).relative_to(root).as_posix(), "symlinks are refused"))
            elif d.startswith("."):
                dirnames.remove(d)
        dirnames.sort()
        for fn in sorted(filenames):
            path = here / fn
            if fn.startswith(".") or path.suffix.lower() not in SUFFIXES:
                continue
            rel = path.relative_to(root).as_posix()
            entry = _entry(path, rel, spec, previous)
            if isinstance(entry, Unreadable):
                unreadable.append(entry)
            elif isinstance(entry, Skipped):
                refused.append(entry)
            elif entry is not None:
                files[rel] = entry
    if unlisted:
        raise FolderUnreadable(spec.name, unlisted)
    return FolderScan(files, tuple(refused), tuple(unreadable))


def record_for(source: str, rel: str, data: bytes, sha256: str) -> Record:
    """The record of one user file of `source` (a folder, or a one-time document); ParseError when it
    holds no text."""
    title, body, page_starts = extract(rel, data)
    if not body.strip():
        raise ParseError("no text")
    metadata: dict[str, object] = {
        "path": rel,
        "bytes": len(data),
        "sha256": sha256,
        "format": Path(rel).suffix.lower()[1:],
    }
    if page_starts:  # a PDF: which page each part of the body is on (the chunks' `pages`)
        metadata["page_starts"] = [list(p) for p in page_starts]
    return Record(
        source=source,
        upstream_id=rel,
        title=title,
        body=body,
        techniques=tuple(technique_mentions(body)),
        metadata=metadata,
        path=rel,
        raw_media_type=media_types.of_path(rel),  # the document's media type (no upstream form is kept)
    )


def read_folder(spec: FolderSpec, previous: Mapping[str, FileEntry] | None = None) -> FolderRead:
    """Every record of the folder; per-file problems become skipped entries, and files that are there but
    could not be read are kept (their documents stay). Raises what scan_folder raises."""
    scan = scan_folder(spec, previous)
    records: list[Record] = []
    skipped: list[Skipped] = [*scan.refused, *scan.unreadable]
    for rel in sorted(scan.files):
        data = _read(spec.path / rel, rel, spec)
        if isinstance(data, Skipped):
            skipped.append(data)
        elif data is not None:
            try:
                records.append(record_for(spec.name, rel, data, hashlib.sha256(data).hexdigest()))
            except ParseError as exc:
                skipped.append(Skipped(rel, exc.reason))
    return FolderRead(tuple(records), tuple(skipped), len(scan.files) + len(scan.refused) + len(scan.unreadable), scan)
