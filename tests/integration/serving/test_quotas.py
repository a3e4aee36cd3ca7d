"""The gate through the API: a required key, per-caller rates (429 + Retry-After), REST and MCP alike."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from serving.app import create_app
from serving.settings import ServingSettings

ALICE = {"X-API-Key": "alice-key"}


def test_a_required_key_refuses_anonymous_callers_everywhere_but_health(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    with TestClient(create_app(settings_for(serving_db_url, mcp_enabled=False, require_api_key=True))) as api:
        for method, path, body in [
            ("GET", "/v1/sources", None),
            ("GET", "/v1/plans", None),
            ("POST", "/v1/search", {"query": "lsass"}),
            ("GET", "/v1/docs/mitre_attack:T1003", None),
        ]:
            response = api.request(method, path, json=body)
            assert response.status_code == 401, path
            assert response.headers["WWW-Authenticate"] == "Bearer"
            assert api.request(method, path, json=body, headers=ALICE).status_code == 200, path
        assert api.get("/healthz").status_code == 200


def test_an_anonymous_caller_over_its_rate_gets_429_and_keyed_callers_do_not(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    settings = settings_for(serving_db_url, mcp_enabled=False, anonymous_rate_per_minute=6)
    with TestClient(create_app(settings)) as api:
        assert api.get("/v1/sources").status_code == 200
        refused = api.get("/v1/sources")
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1 and "requests a minute" in refused.json()["detail"]
        assert api.get("/v1/sources", headers=ALICE).status_code == 200
        schema = api.get("/openapi.json").json()
        assert {"401", "429"} <= set(schema["paths"]["/v1/search"]["post"]["responses"])
