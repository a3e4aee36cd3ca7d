"""The OpenAPI document: an example per operation, each valid for its models."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from serving.api.app import create_app
from serving.api.openapi import load_examples
from serving.contract.changes import ChangesResponse
from serving.contract.coverage_models import CoverageRequest, CoverageResponse
from serving.contract.layer_models import CompareRequest, CompareResponse
from serving.contract.lookup_models import LookupQuery, LookupResponse
from serving.contract.map_models import MapRequest, MapResponse
from serving.contract.plan_models import ExplainResponse, PlanRequest, PlanResponse, PlansResponse
from serving.contract.requests import IdsRequest, SearchRequest
from serving.contract.responses import (
    Chunk,
    ChunksResponse,
    Document,
    DocumentsResponse,
    Health,
    Readiness,
    SearchResponse,
    SourcesResponse,
    StatsResponse,
    UpstreamBatchResponse,
    UpstreamResponse,
)
from serving.contract.upstream_requests import UpstreamRequest
from serving.settings import ServingSettings

# operation id -> (request body model, 200 response model)
MODELS: dict[str, tuple[type[BaseModel] | None, type[BaseModel]]] = {
    "search": (SearchRequest, SearchResponse),
    "plan": (PlanRequest, PlanResponse),
    "explain": (PlanRequest, ExplainResponse),
    "map_text": (MapRequest, MapResponse),
    "coverage": (CoverageRequest, CoverageResponse),
    "compare_layers": (CompareRequest, CompareResponse),
    "lookup": (None, LookupResponse),
    "list_plans": (None, PlansResponse),
    "get_documents": (IdsRequest, DocumentsResponse),
    "get_document": (None, Document),
    "get_upstream": (None, UpstreamResponse),
    "get_upstreams": (UpstreamRequest, UpstreamBatchResponse),
    "get_chunks": (IdsRequest, ChunksResponse),
    "get_chunk": (None, Chunk),
    "list_sources": (None, SourcesResponse),
    "list_changes": (None, ChangesResponse),
    "get_stats": (None, StatsResponse),
    "healthz": (None, Health),
    "readyz": (None, Readiness),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app(ServingSettings(mcp_enabled=False)).openapi()


def _operations(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {op["operationId"]: op for item in document["paths"].values() for op in item.values()}


def test_every_operation_has_models_and_examples(document: dict[str, Any]) -> None:
    assert set(_operations(document)) == set(MODELS) == set(load_examples())


@pytest.mark.parametrize("operation_id", sorted(MODELS))
def test_examples_are_valid_for_their_models(document: dict[str, Any], operation_id: str) -> None:
    op = _operations(document)[operation_id]
    request_model, response_model = MODELS[operation_id]
    response_example = op["responses"]["200"]["content"]["application/json"]["example"]
    response_model.model_validate(response_example)
    if request_model is not None:
        request_model.model_validate(op["requestBody"]["content"]["application/json"]["example"])
    else:
        assert "requestBody" not in op
    for param in op.get("parameters", []):
        if param["in"] == "path":
            assert param["example"], f"{operation_id}: no example for {param['name']}"


def test_the_lookup_example_is_a_valid_query(document: dict[str, Any]) -> None:
    params = {p["name"]: p["example"] for p in _operations(document)["lookup"]["parameters"] if "example" in p}
    assert LookupQuery.model_validate(params).value == ["Certutil.exe", "C:\\Windows\\SysWOW64\\certutil.exe"]


def test_without_a_store_the_source_filter_is_not_an_enum(document: dict[str, Any]) -> None:
    sources = document["components"]["schemas"]["SearchFilters"]["properties"]["sources"]["anyOf"][0]
    assert "enum" not in sources["items"]
    platforms = document["components"]["schemas"]["SearchFilters"]["properties"]["platforms"]["anyOf"][0]
    assert "windows" in platforms["items"]["enum"] and "mac os x" in platforms["items"]["enum"]
