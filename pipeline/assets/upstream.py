"""`upstream/<source>`: observable source assets whose data version is the upstream's version."""

from typing import Any

import dagster as dg

from ..resources import UpstreamResource
from ..sources.interface import UpstreamVersion
from ..sources.registry import SourceSpec
from .keys import upstream_key

_KINDS = {"commit": "git", "release": "github", "feed": "json", "bundled": "yaml"}
_VERSION_NAMES = {
    "commit": "commit SHA",
    "release": "release tag",
    "feed": "feed version",
    "bundled": "content hash of the files shipped with secrag",
}


def observation_metadata(seen: UpstreamVersion) -> dict[str, Any]:
    return {
        "version": seen.version,
        "commit": seen.commit or "",
        "url": dg.MetadataValue.url(seen.url) if seen.url.startswith("http") else seen.url,
        "tracking": seen.tracking,
        "checked_at": dg.MetadataValue.timestamp(seen.checked_at),
    }


def observation(seen: UpstreamVersion) -> dg.AssetObservation:
    """The observation a sensor reports in the tick that saw this version."""
    return dg.AssetObservation(
        asset_key=upstream_key(seen.source),
        metadata=observation_metadata(seen),
        tags={"dagster/data_version": seen.version},
    )


def build_upstream_asset(spec: SourceSpec) -> dg.SourceAsset:
    """The upstream of one source; observing it probes the branch head, latest release or feed."""
    where = spec.repo or spec.feed_url or f"secrag's pipeline/sources/bundled/{spec.name}"

    @dg.observable_source_asset(
        key=upstream_key(spec.name),
        group_name=spec.category,
        description=f"Upstream of {spec.name} ({spec.tracking} of {where}); data version = "
        f"{_VERSION_NAMES[spec.tracking]}.",
        metadata={
            "tracking": spec.tracking,
            "repository": where,
            "branch": spec.branch,
            "poll_interval_seconds": spec.poll_interval,
        },
        tags={f"dagster/kind/{_KINDS[spec.tracking]}": ""},
    )
    def _observe(context: dg.AssetExecutionContext, upstream: UpstreamResource) -> dg.ObserveResult:
        seen = upstream.upstream().probe(spec)
        context.log.info(f"{spec.name}: upstream at {seen.version}")
        return dg.ObserveResult(data_version=dg.DataVersion(seen.version), metadata=observation_metadata(seen))

    return _observe
