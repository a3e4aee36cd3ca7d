"""The upstream for the settings: the real upstreams, or a snapshot's local mirrors."""

from __future__ import annotations

from secrag.settings import Settings

from .interface import Upstream
from .online import OnlineUpstream
from .registry import default_registry
from .snapshot import SnapshotUpstream
from .upstream import UpstreamConfig


def upstream_for(settings: Settings) -> Upstream:
    """Online upstreams; with `upstream_mirror` set, local mirrors of that snapshot (built or reused)."""
    cfg = UpstreamConfig.online(settings)
    if settings.upstream_mirror is None:
        return OnlineUpstream(cfg)
    target = (settings.data_dir / "mirrors").resolve()
    return SnapshotUpstream.build(settings.upstream_mirror, target, default_registry(), cfg)
