"""Sources shipped inside secrag (`tracking: bundled`, e.g. the curated clarifications): their files are
package data under pipeline/sources/bundled/<source>/, their version the content hash of those files, so
an edit released with secrag is a new version like an upstream commit. Whichever upstream the settings
choose (online or a snapshot's mirrors) serves them the same way."""

from __future__ import annotations

import fnmatch
import hashlib
import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from secrag.errors import FetchError
from secrag.files.package_data import package_path

from .interface import FetchResult, Upstream, UpstreamVersion
from .registry import SourceSpec
from .upstream import UpstreamConfig

BUNDLED = "bundled"


def bundled_root(spec: SourceSpec) -> Path:
    return package_path("pipeline.sources", "bundled", spec.name)


def bundled_files(spec: SourceSpec) -> list[Path]:
    """The source's shipped files its `paths` select (not its `exclude`), sorted."""
    root = bundled_root(spec)
    found = {p for pattern in spec.paths for p in root.glob(pattern) if p.is_file()}
    rels = {p: p.relative_to(root).as_posix() for p in found}
    return sorted(p for p, rel in rels.items() if not any(fnmatch.fnmatch(rel, ex) for ex in spec.exclude))


def bundled_version(spec: SourceSpec) -> str:
    """`sha256:<16 hex>` of the selected files' paths and bytes."""
    files = bundled_files(spec)
    if not files:
        raise FetchError(f"{spec.name}: no bundled file matches {', '.join(spec.paths)}")
    digest = hashlib.sha256()
    root = bundled_root(spec)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return f"sha256:{digest.hexdigest()[:16]}"


@dataclass(frozen=True)
class WithBundled:
    """`inner` for upstream sources; the package itself for bundled ones."""

    inner: Upstream

    @property
    def config(self) -> UpstreamConfig:
        return self.inner.config

    def describe(self) -> str:
        return f"{self.inner.describe()}, and the sources bundled with secrag"

    def with_config(self, config: UpstreamConfig) -> WithBundled:
        return WithBundled(self.inner.with_config(config))

    def probe(
        self, spec: SourceSpec, timeout: float | None = None, known: UpstreamVersion | None = None
    ) -> UpstreamVersion:
        if spec.tracking != BUNDLED:
            return self.inner.probe(spec, timeout, known)
        version = bundled_version(spec)
        return UpstreamVersion(spec.name, BUNDLED, version, None, f"bundled:{spec.name}", datetime.now(UTC))

    def fetch(self, spec: SourceSpec, version: UpstreamVersion, workdir: Path, pin: str | None = None) -> FetchResult:
        if spec.tracking != BUNDLED:
            return self.inner.fetch(spec, version, workdir, pin)
        current = bundled_version(spec)
        if pin is not None and pin != current:
            raise FetchError(
                f"{spec.name}: a bundled source has only the version shipped with this release ({current}), not {pin!r}"
            )
        root = bundled_root(spec)
        for path in bundled_files(spec):
            target = workdir / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        return FetchResult(workdir, current, None)
