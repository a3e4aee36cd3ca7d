"""Requests are recorded under the template of the route that matched, never under their raw path."""

from __future__ import annotations

from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.observability.metrics import UNMATCHED
from serving.settings import ServingSettings


def test_requests_are_counted_by_route_template() -> None:
    # No lifespan (no store): the /v1 routes fail, but each is matched and labelled first.
    app = create_app(ServingSettings(_env_file=None, anonymous_rate_per_minute=0))  # type: ignore[call-arg]
    client = TestClient(app, raise_server_exceptions=False)
    for path in ("/v1/docs/attack:T1059.001", "/v1/docs/sigma:a/b/c", "/v1/chunks/x", "/healthz", "/mcp/"):
        client.get(path)
    client.post("/v1/search", json={"query": "x"})
    client.post("/healthz")  # 405: a route matched the path
    for path in ("/nothing", "/v1/nothing/here", "/v2/docs/x"):
        client.get(path)
    counts = {route: row["count"] for route, row in app.state.metrics.summary()["by_route"].items()}
    assert counts == {
        "/v1/docs/{doc_id}": 2,
        "/v1/chunks/{chunk_id}": 1,
        "/v1/search": 1,
        "/healthz": 2,
        "/mcp": 1,
        UNMATCHED: 3,
    }
