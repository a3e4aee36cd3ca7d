"""Run one source's parser over a checkout: file selection, limits, per-file isolation."""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import time
from collections.abc import Iterator
from pathlib import Path

from secrag.errors import ParseError
from secrag.files.safe_files import UnsafeFile, read_capped
from secrag.net.media_types import of_path

from .records import ParseOutcome, Record, Skipped, SourceFile
from .registry import SourceSpec

log = logging.getLogger(__name__)

DEFAULT_MAX_ERROR_SHARE = 0.2


def select_files(spec: SourceSpec, root: Path) -> list[Path]:
    """Files under root matching the spec's globs and not its excludes, sorted."""
    seen: set[Path] = set()
    for pattern in spec.paths:
        for path in root.glob(pattern):
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, ex) for ex in spec.exclude):
                continue
            if path.is_symlink() or path.is_file():
                seen.add(path)
    return sorted(seen)


def _read(spec: SourceSpec, root: Path, path: Path) -> bytes:
    try:
        return read_capped(path, spec.max_file_bytes, within=root)
    except UnsafeFile as exc:
        raise ParseError(exc.reason) from exc


def iter_file_records(
    spec: SourceSpec, root: Path, path: Path, web_url: str, notes: dict[str, list[list[str]]] | None = None
) -> Iterator[Record]:
    """Records of one file, each with its upstream form (the file itself when it holds one record and the
    parser gave none); raises ParseError for a bad one. The parser's notes on the file are appended to notes."""
    rel = path.relative_to(root).as_posix()
    data = _read(spec, root, path)
    file = SourceFile(source=spec.name, root=root, rel=rel, data=data, options=spec.options, web_url=web_url)
    produced = list(spec.parser_module().parse(file))
    if notes is not None:
        for name, values in file.notes.items():
            notes.setdefault(name, []).append(values)
    if len(produced) == 1 and not produced[0].raw:
        text = data.decode("utf-8", "replace")
        produced[0] = dataclasses.replace(produced[0], raw=text, raw_media_type=of_path(rel), raw_whole_file=True)
    yield from produced


def parse_source(
    spec: SourceSpec, root: Path, *, version: str = "", max_error_share: float = DEFAULT_MAX_ERROR_SHARE
) -> ParseOutcome:
    """Parse every selected file; bad files are skipped with their reason.

    Raises ParseError when no file matches (upstream moved a folder), nothing parses, or the
    share of failed files passes `max_error_share`.
    """
    started = time.monotonic()
    files = select_files(spec, root)
    if not files:
        raise ParseError(
            f"no files match {', '.join(spec.paths)} (did upstream move its folder?)", source=spec.name, empty=True
        )
    web_url = spec.web_url.replace("{version}", version or spec.branch)
    records: dict[str, Record] = {}
    skipped: list[Skipped] = []
    failed_files = 0
    notes: dict[str, list[list[str]]] = {}
    for path in files:
        rel = path.relative_to(root).as_posix()
        try:
            produced = list(iter_file_records(spec, root, path, web_url, notes))
        except ParseError as exc:
            failed_files += 1
            skipped.append(Skipped(rel, exc.reason))
            continue
        except Exception as exc:  # noqa: BLE001 - one bad file must not sink the source
            failed_files += 1
            skipped.append(Skipped(rel, f"{type(exc).__name__}: {exc}"[:300]))
            log.warning("parser error", extra={"source": spec.name, "path": rel, "error": repr(exc)})
            continue
        for record in produced:
            first = records.get(record.doc_id)
            if first is not None:
                skipped.append(Skipped(rel, f"duplicate id {record.doc_id} (first in {first.path})"))
                continue
            records[record.doc_id] = record
    if not records:
        raise ParseError(f"nothing parsed from {len(files)} files", source=spec.name, empty=True)
    share = failed_files / len(files)
    if share > max_error_share:
        raise ParseError(
            f"{failed_files} of {len(files)} files failed ({share:.0%} > "
            f"{max_error_share:.0%}); first: {skipped[0].path}: {skipped[0].reason}",
            source=spec.name,
        )
    return ParseOutcome(
        source=spec.name,
        records=tuple(records.values()),
        skipped=tuple(skipped),
        files_seen=len(files),
        seconds=time.monotonic() - started,
        notes={name: _common(lists) for name, lists in notes.items()},
    )


def _common(lists: list[list[str]]) -> tuple[str, ...]:
    """The names in every list, in the first list's order."""
    rest = [set(values) for values in lists[1:]]
    return tuple(v for v in lists[0] if all(v in s for s in rest))
