"""GET /metrics: Prometheus' text format (serving/observability/prometheus.py); unversioned and, like the
probes, open, unless SECRAG_METRICS_KEY is set: then it takes that key and adds the private figures (the
store's sizes and vector totals, the caches' counters), which an open /metrics never shows."""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import SecretStr

from secrag.errors import ConfigError
from serving.access.key_strength import weakness
from serving.access.replica import pooled_lag
from serving.api.deps import presented_key
from serving.contract.errors import KeyRequired, UnknownApiKey
from serving.observability.prometheus import Exposition
from serving.reads.stats import store_sizes
from serving.service import Service

log = logging.getLogger(__name__)
router = APIRouter(tags=["health"])
POOL_STATS = ("pool_size", "pool_available", "requests_waiting", "requests_num", "requests_errors")


def metrics_digest(key: SecretStr | None) -> str | None:
    """SECRAG_METRICS_KEY's sha256, checked at start-up (a weak key is a ConfigError that never quotes it)."""
    if key is None:
        return None
    why = weakness(key.get_secret_value())
    if why is not None:
        raise ConfigError(f"SECRAG_METRICS_KEY is {why}", hint="set SECRAG_METRICS_KEY to a generated key")
    return hashlib.sha256(key.get_secret_value().encode("utf-8")).hexdigest()


def _keyed(request: Request, presented: str | None) -> bool:
    """Whether this scrape gets the private figures: 401 when a key is configured and another (or none) is sent."""
    digest: str | None = request.app.state.metrics_digest
    if digest is None:
        return False
    if not presented:
        raise KeyRequired("/metrics requires SECRAG_METRICS_KEY (Authorization: Bearer or X-API-Key)")
    if not hmac.compare_digest(digest, hashlib.sha256(presented.encode("utf-8")).hexdigest()):
        raise UnknownApiKey
    return True


def _read_store(service: Service, exposition: Exposition) -> None:
    """The store-wide figures, read once per keyed scrape; a database that does not answer leaves the last ones."""
    try:
        with service.pool.connection(timeout=1.0) as conn:
            sizes = store_sizes(conn, service.queries)
    except Exception as exc:  # noqa: BLE001 - a scrape reports, never raises
        log.info("store sizes not read", extra={"error": type(exc).__name__})
        return
    exposition.store(sizes.table_bytes, sizes.index_bytes, sizes.vectors)


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, key: Annotated[str | None, Depends(presented_key)]) -> Response:
    keyed = _keyed(request, key)
    exposition = request.app.state.metrics
    service = getattr(request.app.state, "service", None)
    if service is None:  # not started yet: requests only
        return Response(exposition.scrape(), media_type=CONTENT_TYPE_LATEST)
    lag = pooled_lag(service.pool, service.queries)  # one cheap read per scrape, none per search
    exposition.replica(lag.standby if lag else None, lag.seconds if lag else None)
    if keyed:
        _read_store(service, exposition)
    body = exposition.scrape(
        pool={k: v for k, v in service.pool.get_stats().items() if k in POOL_STATS},
        encoder=service.searcher.encoder.cache_info() if keyed else None,
        results=service.results.info() if keyed else None,
        model=service.searcher.encoder.model_id,
        vectors=service.source_vectors.info(),
    )
    return Response(body, media_type=CONTENT_TYPE_LATEST)
