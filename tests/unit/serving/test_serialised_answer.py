"""A route's answer serialised once (serving/api/routes.serialised) is the body FastAPI sends for the model."""

from __future__ import annotations

from fastapi import FastAPI, Response
from fastapi.testclient import TestClient

from serving.api.routes import serialised
from serving.contract.responses import LegScore, LegScores, Location, SearchResponse, SearchResult


def _answer() -> SearchResponse:
    """A search answer with every kind of field set: nested models, None, unicode, floats, metadata."""
    result = SearchResult(
        doc_id="sigma:1",
        chunk_id="sigma:1#0",
        source="sigma",
        title="Credential dumping – “LSASS” 🔑",
        url=None,
        score=0.123457,
        exact=False,
        scores=LegScores(fts=LegScore(score=0.9166666865348816, rank=1), vector=LegScore(score=1e-7, rank=12)),
        techniques=["T1003.001"],
        domains=["enterprise"],
        platforms=["windows"],
        snippet="<mark>lsass</mark> memory",
        metadata={"level": "high", "tags": ["a", "b"], "n": 3, "nested": {"x": None}},
        location=Location(char_start=0, char_end=40, heading="Detection", pages=[1, 2]),
    )
    return SearchResponse(
        results=[result, result.model_copy(update={"chunk_id": "sigma:1#1", "metadata": None})],
        query_type="natural",
        enriched_query="lsass T1003",
        model="m",
        corrections={"lsas": "lsass"},
        took_ms=12.34,
        truncated=False,
        vector_threshold=None,
        below_vector_threshold=2,
    )


def test_serialised_answer_is_fastapis_own_body() -> None:
    app = FastAPI()

    @app.get("/model", response_model=SearchResponse)
    def as_model() -> SearchResponse:
        return _answer()

    @app.get("/serialised", response_model=SearchResponse)
    def as_bytes() -> Response:
        return serialised(_answer())

    with TestClient(app) as client:
        model, once = client.get("/model"), client.get("/serialised")
    assert once.status_code == model.status_code == 200
    assert once.content == model.content
    assert once.headers["content-type"] == model.headers["content-type"]
    assert once.headers["content-length"] == model.headers["content-length"]
    # the OpenAPI document still names the response model
    schema = app.openapi()["paths"]["/serialised"]["get"]["responses"]["200"]["content"]["application/json"]
    assert schema["schema"]["$ref"].endswith("/SearchResponse")
