"""The upstream configuration for the settings: the real upstreams, or a snapshot's local mirrors."""

from __future__ import annotations

import logging

from secrag.settings import Settings

from .mirror import build_mirror
from .registry import default_registry
from .upstream import UpstreamConfig

log = logging.getLogger(__name__)


def upstream_config(settings: Settings) -> UpstreamConfig:
    """Online upstreams; with `upstream_mirror` set, local mirrors of that snapshot (built or reused)."""
    cfg = UpstreamConfig.online(settings)
    if settings.upstream_mirror is None:
        return cfg
    mirror = build_mirror(settings.upstream_mirror, (settings.data_dir / "mirrors").resolve(), specs=default_registry())
    log.info("using local upstream mirrors", extra={"mirror": str(mirror.root), "sources": len(mirror.repos)})
    return cfg.with_mirror(mirror.repos, mirror.feeds, mirror.api_base)
