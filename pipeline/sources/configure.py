"""The upstream for the settings: the real upstreams, or a snapshot's local mirrors."""

from __future__ import annotations

from secrag.settings import Settings

from .bundled import WithBundled
from .interface import Upstream
from .online import OnlineUpstream
from .registry import default_registry
from .snapshot import SnapshotUpstream
from .upstream import UpstreamConfig


def upstream_for(settings: Settings) -> Upstream:
    """Online upstreams; with `upstream_mirror` set, local mirrors of that snapshot (built or reused); the
    sources bundled with secrag either way."""
    cfg = UpstreamConfig.online(settings)
    if settings.upstream_mirror is None:
        return WithBundled(OnlineUpstream(cfg))
    target = (settings.data_dir / "mirrors").resolve()
    return WithBundled(SnapshotUpstream.build(settings.upstream_mirror, target, default_registry(), cfg))
