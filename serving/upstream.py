"""Refetch the authoritative upstream record of a document, at its recorded version, with caps.

Git-backed sources are read as `<raw base>/<owner>/<repo>/<version>/<path>` (the version is the
commit SHA or release tag the document was published from); feed sources download the feed and
pick the record by id. With SECRAG_UPSTREAM_MIRROR set, files come from that snapshot folder.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from secrag.download_limits import DownloadLimits
from secrag.downloads import get_bytes
from secrag.errors import FetchError, FetchTimeout, FetchTooLarge
from secrag.safe_files import FileTooLarge, UnsafeFile, read_capped
from secrag.url_policy import UrlPolicy

from .errors import NotImplementedFeature, UpstreamFailed, UpstreamTimeout, UpstreamTooLarge
from .settings import ServingSettings

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

    def refetch(self, row: dict[str, Any]) -> UpstreamRecord:
        """The upstream bytes of the document described by `row` (documents + sources columns)."""
        path = _safe_path(row["upstream_path"])
        source, version = row["source"], row["source_version"]
        if row["kind"] != "online":
            raise NotImplementedFeature("only online sources have an upstream")
        if self.mirror is not None:
            where = f"mirror:{source}/{path}"
            data = self._read_mirror(self.mirror, source, path)
        else:
            feed = row["tracking"] == "feed"
            where = str(row["upstream"]) if feed else self._raw_url(str(row["upstream"] or ""), version, path)
            data = self._download(where)
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
