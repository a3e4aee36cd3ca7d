"""What the API tells its operators: Prometheus metrics and the opt-in query log."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings

from secrag.settings import SETTINGS_CONFIG


class ObservabilitySettings(BaseSettings):
    """What the API tells its operators: Prometheus metrics and the opt-in query log."""

    model_config = SETTINGS_CONFIG

    metrics_enabled: bool = Field(
        default=True,
        description="Serve Prometheus metrics at GET /metrics: open like the probes, with request, search, pool and "
        "replica figures only.",
    )
    metrics_key: SecretStr | None = Field(
        default=None,
        description="A key (at least 20 random characters) that GET /metrics then requires (Authorization: Bearer, "
        "or X-API-Key; 401 without), and with which it adds the private figures: the store's table and index "
        "sizes and vectors per model (every tenant's rows) and the query-vector and result caches' counters.",
    )
    query_log: bool = Field(default=False, description="Write one query_log row per search and plan.")
    query_log_text: bool = Field(default=False, description="Also keep the query text in query_log.")
