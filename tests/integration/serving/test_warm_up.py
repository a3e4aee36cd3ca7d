"""Warm-up at start-up (serving/api/warm_up.py): the searches run against the real store before the first
request, and leave nothing in the result cache."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.api.warm_up import REQUESTS
from serving.settings import ServingSettings


def test_the_api_warms_up_before_its_first_request(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], caplog: pytest.LogCaptureFixture
) -> None:
    settings = settings_for(serving_db_url, mcp_enabled=False, warm_up=True, result_cache_size=8)
    with caplog.at_level(logging.INFO, logger="serving.api.warm_up"), TestClient(create_app(settings)) as api:
        service = api.app.state.service  # type: ignore[attr-defined]
        assert service.searcher.encoder.cache_info()["encoded"] >= 1
        assert service.results.info()["size"] == 0  # warm-up results are not kept
        assert api.get("/readyz").status_code == 200
    messages = [r.getMessage() for r in caplog.records if r.name == "serving.api.warm_up"]
    assert any(f"warmed up with {len(REQUESTS)} of {len(REQUESTS)} searches" in m for m in messages), messages


def test_warm_up_is_off_when_configured(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], caplog: pytest.LogCaptureFixture
) -> None:
    with (
        caplog.at_level(logging.INFO, logger="serving.api.warm_up"),
        TestClient(create_app(settings_for(serving_db_url, mcp_enabled=False, warm_up=False))),
    ):
        pass
    assert not [r for r in caplog.records if r.name == "serving.api.warm_up"]
