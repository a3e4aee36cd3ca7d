"""The gate through the API: a required key, per-caller rates (429 + Retry-After), REST and MCP alike."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.plugins.loopback_server import served

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


def test_unknown_keys_are_limited_per_client_address(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    settings = settings_for(serving_db_url, mcp_enabled=False, failed_keys_per_minute=4)  # bursts of 2
    with TestClient(create_app(settings)) as api:
        guesses = [api.get("/v1/sources", headers={"X-API-Key": f"guess-{i}"}).status_code for i in range(3)]
        assert guesses == [401, 401, 429]
        refused = api.get("/v1/sources", headers={"X-API-Key": "guess-3"})  # the address's failures are held up
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "unknown API keys a minute" in refused.json()["detail"]
        assert api.get("/v1/sources", headers=ALICE).status_code == 200  # a valid key is looked up first
        assert api.get("/v1/sources").status_code == 200  # anonymous requests have their own quota


@contextmanager
def _served(app: FastAPI, forwarded_allow_ips: str | None) -> Iterator[str]:
    """The app behind uvicorn on a loopback port, configured as `secrag serve --forwarded-allow-ips` does."""
    with served(
        lambda _port: app, proxy_headers=forwarded_allow_ips is not None, forwarded_allow_ips=forwarded_allow_ips
    ) as url:
        yield url


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-proxy", "untrusted"])
def test_failed_keys_count_against_the_forwarded_client_only_behind_a_trusted_proxy(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], trusted: bool
) -> None:
    """Every request comes from 127.0.0.1, the proxy, naming its client in X-Forwarded-For; a caller cannot
    step out of its window by naming another client unless the proxy is trusted (then the proxy names it)."""
    settings = settings_for(serving_db_url, mcp_enabled=False, failed_keys_per_minute=4)  # bursts of 2
    with _served(create_app(settings), "127.0.0.1" if trusted else None) as url, httpx.Client(base_url=url) as http:

        def status(client: str, key: str) -> int:
            return http.get("/v1/sources", headers={"X-API-Key": key, "X-Forwarded-For": client}).status_code

        assert [status("203.0.113.7", f"guess-{i}") for i in range(3)] == [401, 401, 429]
        assert status("203.0.113.7", "alice-key") == 200  # the failing client's own valid key still works
        assert status("203.0.113.8", "bob-key") == 200  # and every other keyed caller behind the proxy
        assert status("203.0.113.8", "guess-x") == (401 if trusted else 429)


LAYER = {
    "name": "a",
    "domain": "enterprise-attack",
    "versions": {"layer": "4.5"},
    "techniques": [{"techniqueID": "T1003"}],
}
# Every /v1 operation, with a request that would succeed.
OPERATIONS = [
    ("GET", "/v1/sources", None),
    ("GET", "/v1/stats", None),
    ("GET", "/v1/plans", None),
    ("POST", "/v1/search", {"query": "lsass"}),
    ("POST", "/v1/plan", {"query": "lsass"}),
    ("POST", "/v1/plan/explain", {"query": "lsass"}),
    ("POST", "/v1/map", {"text": "The actor dumped LSASS memory with Mimikatz."}),
    ("POST", "/v1/coverage", {"techniques": ["T1003"]}),
    ("POST", "/v1/layers/compare", {"left": LAYER, "right": LAYER, "operation": "minus"}),
    ("GET", "/v1/changes", None),
    ("GET", "/v1/lookup?value=certutil.exe", None),
    ("GET", "/v1/docs/mitre_attack:T1003", None),
    ("POST", "/v1/docs", {"ids": ["mitre_attack:T1003"]}),
    ("GET", "/v1/docs/mitre_attack:T1003/upstream", None),
    ("POST", "/v1/docs/upstream", {"doc_ids": ["mitre_attack:T1003"]}),
    ("GET", "/v1/chunks/mitre_attack:T1003%230", None),
    ("POST", "/v1/chunks", {"ids": ["mitre_attack:T1003#0"]}),
]


def test_every_v1_operation_takes_a_slot_and_the_probes_none(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    settings = settings_for(serving_db_url, mcp_enabled=False, anonymous_heavy_concurrency=1)
    app = create_app(settings)
    with TestClient(app) as api:
        schema = api.get("/openapi.json").json()
        listed = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops if p.startswith("/v1")}
        paths = [(m, p.split("?")[0]) for m, p, _ in OPERATIONS]
        templated = {(m, p.replace("T1003%230", "{chunk_id}").replace("T1003", "{doc_id}")) for m, p in paths}
        assert listed == {(m, p.replace("mitre_attack:", "")) for m, p in templated}  # none is left out
        for method, path, body in OPERATIONS:
            assert api.request(method, path, json=body).status_code == 200, path
        gate = app.state.gate
        with gate.slot(gate.caller(None, "elsewhere")):  # the one anonymous slot is busy
            for method, path, body in OPERATIONS:
                busy = api.request(method, path, json=body)
                assert busy.status_code == 429 and "at once" in busy.json()["detail"], path
            assert api.request("GET", "/v1/sources", headers=ALICE).status_code == 200  # keyed: their own
            assert api.get("/healthz").status_code == 200 and api.get("/readyz").status_code == 200
