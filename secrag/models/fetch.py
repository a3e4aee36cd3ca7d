"""Downloading a hub model's files once (`secrag models fetch ID`, the only code that downloads a model):
each file through the project's capped client and URL policy, checked against the registry's sha256
before it takes its place; a file already there with the right checksum is kept."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast
from urllib.parse import quote

from secrag.errors import ConfigError, FetchError
from secrag.models.onnx_export import file_sha256
from secrag.models.registry import HubSource, ModelInfo, PackageSource
from secrag.models.weights import hub_folder
from secrag.net.download_limits import DownloadLimits
from secrag.net.downloads import fetch_into
from secrag.net.url_policy import UrlPolicy, trusted_base_host

log = logging.getLogger(__name__)

# The hub's hosts: its API host answers `resolve` with a redirect to a content host (every hop is
# checked against the URL policy). SECRAG_HTTP_ALLOWED_HOSTS adds one the hub starts using.
HUB_HOSTS = (
    "huggingface.co",
    "cdn-lfs.huggingface.co",
    "cdn-lfs.hf.co",
    "cdn-lfs-us-1.huggingface.co",
    "cdn-lfs-us-1.hf.co",
    "cdn-lfs-eu-1.huggingface.co",
    "cas-bridge.xethub.hf.co",
)
# A base model's weights are a few hundred MB; the cap stops a runaway answer, not a large model.
FILE_LIMITS = DownloadLimits(max_bytes=8 * 1024**3)
FILE_TIMEOUT = 3600.0  # seconds per file, retries included
PROGRESS_EVERY = 64 * 1024 * 1024  # bytes between progress lines


@dataclass(frozen=True)
class FetchReport:
    """What one fetch did: the folder, the files downloaded and the files already there."""

    model_id: str
    folder: Path
    fetched: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def hub_policy(policy: UrlPolicy, hub_url: str) -> UrlPolicy:
    """`policy` plus the hub's hosts and the host of `hub_url` (a mirror's)."""
    extra = {*HUB_HOSTS, trusted_base_host(hub_url) or ""}
    return UrlPolicy(frozenset(policy.allowed_hosts | extra), allow_file=policy.allow_file)


def file_url(hub_url: str, source: HubSource, name: str) -> str:
    """`<hub>/<repo>/resolve/<revision>/<file>`: one file of the repository at the pinned commit."""
    return f"{hub_url.rstrip('/')}/{source.hub}/resolve/{source.revision}/{quote(name)}"


class _HashingFile:
    """A file being written that hashes what it is given and logs progress."""

    def __init__(self, fh: IO[bytes], label: str) -> None:
        self._fh = fh
        self._label = label
        self.digest = hashlib.sha256()
        self.size = 0
        self._next_report = PROGRESS_EVERY

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        if self.size >= self._next_report:
            log.info("fetching %s: %d MB so far", self._label, self.size // (1024 * 1024))
            self._next_report += PROGRESS_EVERY
        return self._fh.write(data)


def _unpinned(info: ModelInfo, source: HubSource) -> None:
    missing = sorted(name for name, sha in source.files.items() if sha is None)
    if missing:
        raise ConfigError(
            f"model {info.model_id}: the registry pins no sha256 for {', '.join(missing)}; secrag does not "
            "download unverified weights",
            hint="give each file's sha256 in a SECRAG_MODELS_FILE entry of your own (the hub shows them) "
            "and fetch that id",
        )


def _fetch_file(url: str, dest: Path, expected: str, policy: UrlPolicy, limits: DownloadLimits, timeout: float) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(f".{dest.name}.part")
    sinks: list[_HashingFile] = []

    @contextmanager
    def open_sink() -> Iterator[IO[bytes]]:
        with part.open("wb") as fh:  # a fresh file (and hash) per attempt
            sinks.append(_HashingFile(fh, dest.name))
            yield cast(IO[bytes], sinks[-1])  # it has the one method the client calls, write()

    started = time.monotonic()
    try:
        fetch_into(url, policy, limits, timeout, open_sink)
        actual = sinks[-1].digest.hexdigest()
        if actual != expected:
            raise FetchError(
                f"{url}: sha256 {actual} is not the registry's {expected}; the download was deleted",
                hint="the hub's file is not the one the registry pinned: check the entry's revision and checksums",
            )
        os.chmod(part, 0o644)
        part.replace(dest)
    finally:
        part.unlink(missing_ok=True)
    log.info("fetched %s (%d bytes, sha256 verified) in %.1f s", dest, sinks[-1].size, time.monotonic() - started)


def fetch_model(
    info: ModelInfo,
    models_dir: Path,
    policy: UrlPolicy,
    hub_url: str,
    *,
    limits: DownloadLimits = FILE_LIMITS,
    timeout: float = FILE_TIMEOUT,
) -> FetchReport:
    """Download the files of a hub model (its base model's, for an int8 id) into the models folder.

    Idempotent: a file whose sha256 is the registry's is kept; any other is downloaded again.
    """
    source = info.source
    if not isinstance(source, HubSource):
        kind = "a package" if isinstance(source, PackageSource) else "a folder on this machine"
        raise ConfigError(f"model {info.model_id} has no hub source; its weights come from {kind}: nothing to fetch")
    _unpinned(info, source)
    folder = hub_folder(source, models_dir)
    report = FetchReport(info.model_id, folder)
    for name, expected in sorted(source.files.items()):
        assert expected is not None  # _unpinned refused the model otherwise
        dest = folder / name
        if dest.is_file() and file_sha256(dest) == expected:
            report.kept.append(name)
            continue
        url = file_url(hub_url, source, name)
        log.info("fetching %s of model %s from %s", name, info.model_id, url)
        _fetch_file(url, dest, expected, policy, limits, timeout)
        report.fetched.append(name)
    log.info(
        "model %s is in %s: %d files fetched, %d already there",
        info.model_id,
        folder,
        len(report.fetched),
        len(report.kept),
    )
    return report
