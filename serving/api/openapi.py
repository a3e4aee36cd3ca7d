"""The OpenAPI document: readable operation ids, an example per operation, and the vocabularies
only the store and the running API know (the online sources, the serving model and its dimensions).

Examples (a request body, path parameters and the 200 response per operation) are package data,
`openapi_examples.yaml`. The online sources a filter may name are this deployment's data, so the
document lists them (read once from the store when it is first asked for; user folders are left
out, their names are not public). Until the store answers, the document says what the models say.
"""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import yaml
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from psycopg_pool import PoolTimeout

from secrag.files.package_data import package_path
from serving.access.request_limits import RequestLimits

log = logging.getLogger(__name__)
EXAMPLES = "openapi_examples.yaml"


def load_examples() -> dict[str, dict[str, Any]]:
    """Operation id -> {request, parameters, response} (serving/api/openapi_examples.yaml)."""
    data: dict[str, dict[str, Any]] = yaml.safe_load(package_path("serving.api", EXAMPLES).read_text("utf-8"))
    return data


def _add_examples(document: dict[str, Any], examples: dict[str, dict[str, Any]]) -> None:
    for item in document.get("paths", {}).values():
        for operation in item.values():
            example = examples.get(operation.get("operationId", ""))
            if not example:
                continue
            if "request" in example:
                operation["requestBody"]["content"]["application/json"]["example"] = example["request"]
            for param in operation.get("parameters", []):
                if param["name"] in example.get("parameters", {}):
                    param["example"] = example["parameters"][param["name"]]
            operation["responses"]["200"]["content"]["application/json"]["example"] = example["response"]


def operation_id(route: APIRoute) -> str:
    """Stable, readable operation ids: the route function's name (search, get_document, ...)."""
    return route.name


def _source_names(app: FastAPI) -> list[str] | None:
    service = getattr(app.state, "service", None)
    if service is None:
        return None
    try:
        with service.pool.connection(timeout=2.0) as conn:
            return sorted(service.catalog.public_sources(conn))
    except (PoolTimeout, psycopg.Error) as exc:
        log.info("OpenAPI document without the source list: the store did not answer", extra={"error": str(exc)})
        return None


def _list_sources(document: dict[str, Any], names: list[str]) -> None:
    """The filters' `sources` items as an enum of the online sources (any case is accepted too)."""
    prop = document.get("components", {}).get("schemas", {}).get("SearchFilters", {}).get("properties", {})
    for variant in prop.get("sources", {}).get("anyOf", []):
        if variant.get("type") == "array":
            variant["items"]["enum"] = names


def _serving_model(app: FastAPI) -> tuple[str, int] | None:
    service = getattr(app.state, "service", None)
    if service is None:
        return None
    encoder = service.searcher.encoder
    return encoder.model_id, encoder.dimensions


def _state_model(document: dict[str, Any], model: str, dimensions: int) -> None:
    """QueryEmbedding as this API accepts it: the serving model's id and its number of dimensions."""
    props = document.get("components", {}).get("schemas", {}).get("QueryEmbedding", {}).get("properties", {})
    if props:
        props["model"]["enum"] = [model]
        props["values"]["minItems"] = props["values"]["maxItems"] = dimensions


def install(app: FastAPI) -> None:
    """Serve the document built by `build`, cached once it holds the store's vocabularies."""

    def build() -> dict[str, Any]:
        model = _serving_model(app)
        if app.openapi_schema is not None and getattr(app.state, "openapi_model", None) == model:
            return app.openapi_schema  # built for this serving model (the API follows the active one)
        document = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version=app.openapi_version,
            description=app.description,
            routes=app.routes,
        )
        _add_examples(document, load_examples())
        RequestLimits.from_settings(app.state.settings).state(document)
        names = _source_names(app)
        if model:
            _state_model(document, *model)
        if names:
            _list_sources(document, names)
        if names and model:
            app.openapi_schema, app.state.openapi_model = document, model
        return document

    app.openapi = build  # type: ignore[method-assign]
