"""Refetch the authoritative upstream record of a document, at its recorded version, with caps.

Git-backed sources are read as `<raw base>/<owner>/<repo>/<version>/<path>` (the version is the
commit SHA or release tag the document was published from); feed sources download the feed and
pick the record by id. With SECRAG_UPSTREAM_MIRROR set, files come from that snapshot folder.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

import httpx

from .errors import NotImplementedFeature, UpstreamFailed, UpstreamTimeout, UpstreamTooLarge

_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class UpstreamRecord:
    """What GET /v1/docs/{doc_id}/upstream returns."""

    doc_id: str
    source: str
    version: str
    path: str
    fetched_from: str
    size: int
    content: str
    record: Any = None  # the record picked out of a feed


def _safe_path(path: str | None) -> PurePosixPath:
    if not path:
        raise NotImplementedFeature("this document has no recorded upstream path (published before 0003)")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise UpstreamFailed("the recorded upstream path is not a relative path")
    return pure


def _download(url: str, max_bytes: int, timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    try:
        with httpx.stream("GET", url, timeout=timeout, follow_redirects=False) as response:
            if response.status_code != 200:
                raise UpstreamFailed(f"upstream answered {response.status_code}")
            declared = int(response.headers.get("content-length") or 0)
            if declared > max_bytes:
                raise UpstreamTooLarge(f"the upstream file is {declared} bytes, over the {max_bytes}-byte cap")
            body = bytearray()
            for part in response.iter_bytes():
                body.extend(part)
                if len(body) > max_bytes:
                    raise UpstreamTooLarge(f"the upstream file is over the {max_bytes}-byte cap")
                if time.monotonic() > deadline:
                    raise UpstreamTimeout(f"the upstream did not answer within {timeout:g} s")
            return bytes(body)
    except httpx.TimeoutException as exc:
        raise UpstreamTimeout(f"the upstream did not answer within {timeout:g} s") from exc
    except httpx.HTTPError as exc:
        raise UpstreamFailed(f"the upstream could not be reached ({type(exc).__name__})") from exc


def _read_mirror(mirror: Path, source: str, path: PurePosixPath, max_bytes: int) -> bytes:
    base = (mirror / source).resolve()
    target = (base / Path(*path.parts)).resolve()
    if not target.is_relative_to(base) or not target.is_file():
        raise UpstreamFailed("the record is not in the mirror")
    if target.stat().st_size > max_bytes:
        raise UpstreamTooLarge(f"the upstream file is {target.stat().st_size} bytes, over the {max_bytes}-byte cap")
    return target.read_bytes()


def _feed_record(data: bytes, doc_id: str) -> Any:  # noqa: ANN401
    """The entry of a JSON feed whose id value equals the document's upstream id (e.g. cveID)."""
    wanted = doc_id.split(":", 1)[1]
    try:
        feed = json.loads(data)
    except ValueError as exc:
        raise UpstreamFailed("the feed is not valid JSON") from exc
    for value in feed.values() if isinstance(feed, dict) else []:
        if isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict) and wanted in (str(v) for v in entry.values()):
                    return entry
    raise UpstreamFailed("the record is no longer in the feed")


def refetch(
    row: dict[str, Any], *, raw_base: str, mirror: Path | None, max_bytes: int, timeout: float
) -> UpstreamRecord:
    """The upstream bytes of the document described by `row` (documents + sources columns)."""
    path = _safe_path(row["upstream_path"])
    source, version = row["source"], row["source_version"]
    if row["kind"] != "online":
        raise NotImplementedFeature("only online sources have an upstream")
    if mirror is not None:
        where = f"mirror:{source}/{path}"
        data = _read_mirror(mirror, source, path, max_bytes)
    elif row["tracking"] == "feed":
        where = str(row["upstream"])
        data = _download(where, max_bytes, timeout)
    else:
        match = _GITHUB.match(str(row["upstream"] or ""))
        if not match:
            raise NotImplementedFeature("refetch supports GitHub-hosted sources and feeds")
        where = "/".join(
            [
                raw_base.rstrip("/"),
                match.group(1),
                match.group(2),
                quote(version, safe=""),
                *(quote(part) for part in path.parts),
            ]
        )
        data = _download(where, max_bytes, timeout)
    record = _feed_record(data, row["doc_id"]) if row["tracking"] == "feed" else None
    return UpstreamRecord(
        doc_id=row["doc_id"],
        source=source,
        version=version,
        path=str(path),
        fetched_from=where,
        size=len(data),
        content=data.decode("utf-8", "replace") if record is None else "",
        record=record,
    )
