"""Where a snapshot comes from: a file on this machine (a path or a file:// URL), or an https URL downloaded
first with the project's fetcher (its URL policy, time budget and retries) under SECRAG_SNAPSHOT_MAX_BYTES,
only when its signature will be checked (SECRAG_SNAPSHOT_PUBLIC_KEY) or the operator accepts unsigned ones."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from secrag.errors import SnapshotRefused
from secrag.net import downloads
from secrag.net.download_limits import DownloadLimits
from secrag.net.url_policy import UrlPolicy, file_path
from secrag.settings import Settings

log = logging.getLogger(__name__)


def is_url(location: str) -> bool:
    """An http(s) URL, fetched; anything else (a path, a file:// URL) is a file on this machine."""
    return urlsplit(location).scheme.lower() in ("https", "http")


def check_signed_url(location: str, settings: Settings) -> None:
    """SnapshotRefused for a URL when its signature would not be checked and unsigned ones are not accepted:
    whoever serves or intercepts the URL would choose the rows (a file's checksums are in the same file)."""
    if is_url(location) and not settings.snapshot_public_key and not settings.snapshot_unsigned_urls:
        raise SnapshotRefused(
            f"the snapshot {location} is named by URL and SECRAG_SNAPSHOT_PUBLIC_KEY is unset: a snapshot from a "
            "URL must be signed; nothing was downloaded",
            hint="set SECRAG_SNAPSHOT_PUBLIC_KEY to the key that signed it (secrag snapshot public-key), or "
            "SECRAG_SNAPSHOT_UNSIGNED_URLS=true to accept unsigned snapshots from URLs",
        )


@contextmanager
def local_copy(location: str, settings: Settings) -> Iterator[Path]:
    """The snapshot as a local file: `location` itself, or its download (deleted afterwards; refused first by
    check_signed_url). The URL's own host is allowed: the operator named it (like SECRAG_MODELS_HUB_URL)."""
    if not is_url(location):
        yield file_path(location) if location.lower().startswith("file:") else Path(location).expanduser()
        return
    check_signed_url(location, settings)
    policy = UrlPolicy.from_settings(settings, extra_bases=(location,))
    limits = DownloadLimits(max_bytes=settings.snapshot_max_bytes)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="snapshot-", dir=settings.data_dir) as tmp:
        started = time.monotonic()
        target = downloads.download(location, Path(tmp) / "snapshot.tar", policy, limits, settings.fetch_timeout)
        log.info("snapshot downloaded: %d bytes in %.1fs", target.stat().st_size, time.monotonic() - started)
        yield target
