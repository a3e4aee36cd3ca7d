"""SECRAG_METRICS_KEY: a weak key stops the start (never quoted); a strong one is kept as its digest only."""

from __future__ import annotations

import hashlib

import pytest

from secrag.errors import ConfigError
from serving.api.app import create_app
from serving.settings import ServingSettings


def _settings(**values: object) -> ServingSettings:
    return ServingSettings(_env_file=None, mcp_enabled=False, **values)  # type: ignore[call-arg]


def test_a_weak_metrics_key_stops_the_start_without_quoting_it() -> None:
    with pytest.raises(ConfigError, match="SECRAG_METRICS_KEY is too short") as caught:
        create_app(_settings(metrics_key="prometheus"))
    assert "prometheus" not in str(caught.value).replace("SECRAG_METRICS_KEY", "")


def test_a_strong_metrics_key_is_kept_as_its_digest() -> None:
    key = "Zq7_xK2mP9vR4wT8yB1nC5hJ3dF6gL0s"
    app = create_app(_settings(metrics_key=key))
    assert app.state.metrics_digest == hashlib.sha256(key.encode()).hexdigest()
    assert create_app(_settings()).state.metrics_digest is None  # unset: /metrics is open, without private figures
