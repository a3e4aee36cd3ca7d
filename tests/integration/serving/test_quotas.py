"""The gate through the API: a required key, per-caller rates (429 + Retry-After), REST and MCP alike."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient

from serving.api.app import create_app
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


def test_unknown_keys_are_limited_per_client_address(
    serving_db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    settings = settings_for(serving_db_url, mcp_enabled=False, failed_keys_per_minute=4)  # bursts of 2
    with TestClient(create_app(settings)) as api:
        guesses = [api.get("/v1/sources", headers={"X-API-Key": f"guess-{i}"}).status_code for i in range(3)]
        assert guesses == [401, 401, 429]
        refused = api.get("/v1/sources", headers=ALICE)  # the address is held up, whatever key it tries
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
        assert "unknown API keys a minute" in refused.json()["detail"]
        assert api.get("/v1/sources").status_code == 200  # anonymous requests have their own quota


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
