"""The authoritative upstream form of one record, at the version its document was published from.

By default it is the form the pipeline stored at publish (document_raw, migration 0013): one Sigma file,
one STIX object, one feed entry, read from the store by any API pod without upstream access. `live`
reads the upstream instead: git-backed sources as `<raw base>/<owner>/<repo>/<version>/<path>` (the
version is the commit SHA or release tag), feeds by downloading the feed; the record is picked out of
its file by id. With SECRAG_UPSTREAM_MIRROR set, live files come from that snapshot folder (its newest
snapshot, whatever version the document was published from).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from secrag.errors import FetchError, FetchTimeout, FetchTooLarge, ParseError
from secrag.files import safe_json
from secrag.files.safe_files import FileTooLarge, UnsafeFile, read_capped
from secrag.net import media_types
from secrag.net.download_limits import DownloadLimits
from secrag.net.downloads import get_bytes
from secrag.net.url_policy import UrlPolicy
from serving.contract.errors import (
    InvalidField,
    NotImplementedFeature,
    UpstreamFailed,
    UpstreamTimeout,
    UpstreamTooLarge,
)
from serving.settings import ServingSettings

_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?/?$")


@dataclass(frozen=True)
class UpstreamRecord:
    """What GET /v1/docs/{doc_id}/upstream returns for one document."""

    doc_id: str
    source: str
    version: str
    path: str
    origin: str  # "store": the form kept at publish; "live": read from the upstream (or its mirror) now
    fetched_from: str
    media_type: str
    size: int
    content: str
    record: Any = None  # the record as data when its form is structured (JSON, YAML, TOML)
    missing_columns: tuple[str, ...] = ()


# The keys that name one record inside its upstream file, in the order they are tried: a STIX or ATLAS
# id, an Atomic test's GUID, a KEV CVE, an artifact's name.
_IDENTITY_KEYS = ("id", "auto_generated_guid", "cveID", "name")
_LOCATE_MAX_NODES = 200_000


def _locate(tree: Any, stored: Any) -> Any:  # noqa: ANN401 - parsed upstream data
    """The mapping of `tree` that is the same record as `stored` (by its first identity key), or None."""
    key = _identity(stored)
    if key is None:
        return None
    pending, seen = [tree], 0
    while pending and seen < _LOCATE_MAX_NODES:
        node = pending.pop()
        seen += 1
        if isinstance(node, dict):
            if node.get(key) == stored[key]:
                return node
            pending.extend(v for v in node.values() if isinstance(v, dict | list))
        elif isinstance(node, list):
            pending.extend(v for v in reversed(node) if isinstance(v, dict | list))
    return None


def _identity(stored: Any) -> str | None:  # noqa: ANN401 - a parsed record
    """The key that names `stored` inside its file (`_IDENTITY_KEYS`), or None when it has none."""
    if not isinstance(stored, dict):
        return None
    return next((k for k in _IDENTITY_KEYS if isinstance(stored.get(k), str | int)), None)


def _columns(record: Any, columns: Sequence[str], media_type: str) -> tuple[dict[str, Any], tuple[str, ...]]:  # noqa: ANN401
    """The record's top-level keys named in `columns`, and the names it does not have."""
    if not isinstance(record, dict):
        raise InvalidField(
            ["query", "columns"],
            f"columns select top-level keys of a structured record (JSON, YAML or TOML); this one is {media_type}",
        )
    return {c: record[c] for c in columns if c in record}, tuple(c for c in columns if c not in record)


def _safe_path(path: str | None) -> PurePosixPath:
    if not path:
        raise NotImplementedFeature("this document has no recorded upstream path (published before 0003)")
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts:
        raise UpstreamFailed("the recorded upstream path is not a relative path")
    return pure


def _feed_record(data: bytes, doc_id: str) -> Any:  # noqa: ANN401
    """The entry of a JSON feed whose id value equals the document's upstream id (e.g. cveID)."""
    wanted = doc_id.split(":", 1)[1]
    try:
        feed = safe_json.load(data)  # size and depth limits: the feed is untrusted
    except ParseError as exc:
        raise UpstreamFailed("the feed is not valid JSON") from exc
    for value in feed.values() if isinstance(feed, dict) else []:
        if isinstance(value, list):
            for entry in value:
                if isinstance(entry, dict) and wanted in (str(v) for v in entry.values()):
                    return entry
    raise UpstreamFailed("the record is no longer in the feed")


@dataclass(frozen=True)
class Refetcher:
    """Reads upstream records for the API: one attempt, the shared URL policy, size and time caps."""

    raw_base: str
    mirror: Path | None
    policy: UrlPolicy
    max_bytes: int
    timeout: float

    @classmethod
    def from_settings(cls, settings: ServingSettings, policy: UrlPolicy | None = None) -> Refetcher:
        """The settings' caps; the policy of the pipeline's fetches, trusting an https raw base too."""
        return cls(
            raw_base=settings.upstream_raw_base.rstrip("/"),
            mirror=settings.upstream_mirror,
            policy=policy or UrlPolicy.from_settings(settings, extra_bases=[settings.upstream_raw_base]),
            max_bytes=settings.upstream_max_bytes,
            timeout=settings.upstream_timeout,
        )

    def _download(self, url: str) -> bytes:
        # The API answers one caller: no retries, and no detail (URLs, addresses) in the message.
        limits = DownloadLimits(max_bytes=self.max_bytes, max_attempts=1)
        try:
            return get_bytes(url, self.policy, limits, self.timeout)
        except FetchTooLarge as exc:
            raise UpstreamTooLarge(f"the upstream file is over the {self.max_bytes}-byte cap") from exc
        except FetchTimeout as exc:
            raise UpstreamTimeout(f"the upstream did not answer within {self.timeout:g} s") from exc
        except FetchError as exc:
            raise UpstreamFailed("the upstream did not give the record") from exc

    def _read_mirror(self, mirror: Path, source: str, path: PurePosixPath) -> bytes:
        base = mirror / source
        try:
            return read_capped(base.joinpath(*path.parts), self.max_bytes, within=base)
        except FileTooLarge as exc:
            raise UpstreamTooLarge(f"the upstream file is over the {self.max_bytes}-byte cap") from exc
        except UnsafeFile as exc:
            raise UpstreamFailed("the record is not in the mirror") from exc

    def _raw_url(self, upstream: str, version: str, path: PurePosixPath) -> str:
        match = _GITHUB.match(upstream)
        if not match:
            raise NotImplementedFeature("refetch supports GitHub-hosted sources and feeds")
        parts = [self.raw_base, match.group(1), match.group(2), quote(version, safe="")]
        return "/".join([*parts, *(quote(part) for part in path.parts)])

    def refetch(
        self, row: dict[str, Any], *, live: bool = False, columns: Sequence[str] | None = None
    ) -> UpstreamRecord:
        """The upstream form of the one record `row` describes (documents, sources and document_raw
        columns): the form kept at publish, or with `live` the upstream's at the published version;
        `columns` keeps only those top-level keys of a structured record (and no text)."""
        if row["kind"] != "online":
            raise NotImplementedFeature("only online sources have an upstream")
        if live:
            text, media_type, where = self._live(row)
            size = len(text.encode("utf-8"))
        elif row["raw"] is None:
            raise NotImplementedFeature(
                "no upstream form is stored for this document (published before 0013); ask with live=true, "
                "or republish its source"
            )
        else:
            size, media_type, where = row["raw_size"], row["raw_media_type"], "store"
        if size > self.max_bytes:  # a stored form before it is decompressed
            raise UpstreamTooLarge(f"the upstream record is over the {self.max_bytes}-byte cap")
        if not live:
            text = _stored(row)
        record = media_types.load(text, media_type)
        missing: tuple[str, ...] = ()
        if columns:
            record, missing = _columns(record, columns, media_type)
            text = ""
        return UpstreamRecord(
            doc_id=row["doc_id"],
            source=row["source"],
            version=row["source_version"],
            path=str(row["upstream_path"] or ""),
            origin="live" if live else "store",
            fetched_from=where,
            media_type=media_type,
            size=size,
            content=text,
            record=record,
            missing_columns=missing,
        )

    def _live(self, row: dict[str, Any]) -> tuple[str, str, str]:
        """(text, media type, where) of the record read from the upstream file at the published version."""
        if row["tracking"] == "bundled":
            raise NotImplementedFeature(
                "this source is bundled with secrag, which is its upstream: its stored form (live=false) is the "
                "record as published"
            )
        path = _safe_path(row["upstream_path"])
        source, version = row["source"], row["source_version"]
        if self.mirror is not None:
            where = f"mirror:{source}/{path}"
            data = self._read_mirror(self.mirror, source, path)
        else:
            feed = row["tracking"] == "feed"
            where = str(row["upstream"]) if feed else self._raw_url(str(row["upstream"] or ""), version, path)
            data = self._download(where)
        if row["tracking"] == "feed":
            return media_types.dump(_feed_record(data, row["doc_id"]), media_types.JSON), media_types.JSON, where
        text = data.decode("utf-8", "replace")
        if row["raw"] is None or row["raw_whole_file"]:
            return text, row["raw_media_type"] or media_types.of_path(path), where
        # One record of a file holding many (a STIX bundle, an Atomic technique file): the same record
        # as the stored one, by its id.
        stored_type = row["raw_media_type"]
        stored = media_types.load(_stored(row), stored_type)
        if _identity(stored) is None:  # a Turtle class, an ECS field set: nothing names it in the file
            raise NotImplementedFeature(
                f"a live refetch cannot pick this {stored_type} record out of its file; the stored form "
                "(live=false) is the record at the published version"
            )
        found = _locate(media_types.load(text, media_types.of_path(path)), stored)
        if found is None:
            raise UpstreamFailed("the record is not in the upstream file at the published version")
        return media_types.dump(found, stored_type), stored_type, where


def _stored(row: dict[str, Any]) -> str:
    return zlib.decompress(row["raw"]).decode("utf-8", "replace")
