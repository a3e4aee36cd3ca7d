"""The snapshot upstream: sources read from local mirrors of a snapshot folder (air-gapped sites, tests).

A snapshot folder holds one folder per source (see shared/upstream/README.md in the repository
docs); `mirror.build_mirror` turns each into a bare git repository (plus a release tag and a
feed file where the source tracks those). Probes read the mirrors directly; fetches are the
same sparse checkouts the online upstream makes, from file:// URLs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from secrag.errors import FetchError, FetchTooLarge
from secrag.files.safe_files import FileTooLarge, UnsafeFile, read_capped
from secrag.net.url_policy import UrlPolicy

from .fetch import feed_target
from .git_fetch import SHA_RE, checkout
from .interface import FetchResult, UpstreamVersion
from .mirror import Mirror, build_mirror
from .probes import feed_version
from .registry import SourceSpec
from .upstream import UpstreamConfig

log = logging.getLogger(__name__)

_LOCAL_GIT = UrlPolicy(allowed_hosts=frozenset(), allow_file=True)  # the mirrors' file:// URLs, nothing else


@dataclass(frozen=True)
class SnapshotUpstream:
    """Every source from a built mirror of a snapshot folder."""

    mirror: Mirror
    config: UpstreamConfig  # limits and timeouts

    @classmethod
    def build(
        cls, snapshot: Path, target: Path, specs: Mapping[str, SourceSpec], config: UpstreamConfig
    ) -> SnapshotUpstream:
        """Build (or reuse, when unchanged) the mirrors of the snapshot under target."""
        mirror = build_mirror(snapshot, target, specs=specs)
        log.info("using local upstream mirrors", extra={"mirror": str(mirror.root), "sources": len(mirror.repos)})
        return cls(mirror, config)

    def describe(self) -> str:
        return f"snapshot mirrors in {self.mirror.root} ({len(self.mirror.sources)} sources)"

    def with_config(self, config: UpstreamConfig) -> SnapshotUpstream:
        return replace(self, config=config)

    def _known(self, spec: SourceSpec) -> None:
        if spec.name not in self.mirror.sources:
            raise FetchError(
                f"{spec.name}: not in the upstream snapshot", hint="add its folder to SECRAG_UPSTREAM_MIRROR"
            )

    def _feed_bytes(self, spec: SourceSpec) -> bytes:
        if spec.name not in self.mirror.feeds:
            raise FetchError(f"{spec.name}: the snapshot has no feed file {spec.paths[0] if spec.paths else ''!r}")
        try:
            return read_capped(self.mirror.feed_path(spec.name), self.config.limits.max_bytes)
        except FileTooLarge as exc:
            raise FetchTooLarge(f"{spec.name}: feed {exc.reason}") from exc
        except UnsafeFile as exc:
            raise FetchError(f"{spec.name}: feed {exc.reason}") from exc

    def probe(
        self, spec: SourceSpec, timeout: float | None = None, known: UpstreamVersion | None = None
    ) -> UpstreamVersion:
        """The mirror's version (read from local files: nothing to ask conditionally, so `known` is not needed)."""
        self._known(spec)
        commit: str | None
        if spec.tracking == "commit":
            url = self.mirror.repos[spec.name]
            version = commit = self.mirror.head(spec.name)
        elif spec.tracking == "release":
            url = self.mirror.repos[spec.name]
            version = self.mirror.latest_release(spec.name)
            commit = self.mirror.rev_parse(spec.name, version)
        elif spec.tracking == "feed":
            url = self.mirror.feeds.get(spec.name, "")
            version, commit = feed_version(self._feed_bytes(spec), spec.version_field), None
        else:
            raise FetchError(f"{spec.name}: unknown tracking {spec.tracking!r}")
        return UpstreamVersion(spec.name, spec.tracking, version, commit, url, datetime.now(UTC))

    def fetch(self, spec: SourceSpec, version: UpstreamVersion, workdir: Path, pin: str | None = None) -> FetchResult:
        self._known(spec)
        started = time.monotonic()
        if spec.tracking == "feed":
            if pin:
                raise FetchError(f"{spec.name}: a feed keeps no history, so it cannot be pinned to {pin!r}")
            data = self._feed_bytes(spec)
            target = feed_target(spec, workdir)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            result = FetchResult(workdir, feed_version(data, spec.version_field), None)
        else:
            label, commit = self._resolve(spec, version, pin)
            repo = self.mirror.repos[spec.name]
            checkout(repo, commit, spec.paths, workdir, self.config.fetch_timeout, _LOCAL_GIT)
            result = FetchResult(workdir, label, commit)
        log.info(
            "fetched from the snapshot mirror",
            extra={"source": spec.name, "version": result.version, "seconds": round(time.monotonic() - started, 2)},
        )
        return result

    def _resolve(self, spec: SourceSpec, version: UpstreamVersion, pin: str | None) -> tuple[str, str]:
        """(version label, commit) to check out: the pin's, else the probed one."""
        if pin is None:
            if not version.commit:
                raise FetchError(f"{spec.name}: the probe recorded no commit to fetch")
            return version.version, version.commit
        commit = self.mirror.rev_parse(spec.name, pin)
        if SHA_RE.match(pin) or spec.tracking != "release":
            return commit, commit
        return pin, commit
