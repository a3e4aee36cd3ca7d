"""The OpenAPI document served by a running API: its examples work, its vocabularies are the store's."""

from __future__ import annotations

from fastapi.testclient import TestClient

from serving.api.openapi import load_examples


def test_request_examples_are_answered(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    for path, item in document["paths"].items():
        for method, op in item.items():
            example = load_examples()[op["operationId"]]
            if op["operationId"] == "get_upstream":
                continue  # the test upstream has no such record (its example is from production)
            url, query = path, {}
            for name, value in example.get("parameters", {}).items():
                if "{" + name + "}" in path:
                    url = url.replace("{" + name + "}", value.replace("#", "%23"))
                else:
                    query[name] = value
            response = client.request(method, url, json=example.get("request"), params=query)
            assert response.status_code == 200, (op["operationId"], response.text[:300])
            assert set(response.json()) == set(example["response"]), op["operationId"]


def test_the_source_filter_lists_the_online_sources(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    items = document["components"]["schemas"]["SearchFilters"]["properties"]["sources"]["anyOf"][0]["items"]
    assert "sigma" in items["enum"] and "mitre_attack" in items["enum"]
    assert not any(name.startswith(("acme", "globex")) for name in items["enum"])  # user folders stay private
    upper = client.post("/v1/search", json={"query": "lsass", "filters": {"sources": ["SIGMA"]}})
    assert upper.status_code == 200  # any case is accepted, as the description says


def test_the_query_embedding_is_stated_for_the_serving_model(client: TestClient) -> None:
    encoder = client.app.state.service.searcher.encoder  # type: ignore[attr-defined]
    schema = client.get("/openapi.json").json()["components"]["schemas"]["QueryEmbedding"]["properties"]
    assert schema["model"]["enum"] == [encoder.model_id]
    assert schema["values"]["minItems"] == schema["values"]["maxItems"] == encoder.dimensions
    assert "contains" in schema["values"]  # not zero, in JSON Schema's words
