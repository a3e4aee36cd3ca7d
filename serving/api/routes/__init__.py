"""Thin routers, one per resource; each takes the parts of the service it uses (serving/api/deps.py)."""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

API_PREFIX = "/v1"  # the routers of /v1 carry it, so a matched route's path is its whole template

M = TypeVar("M", bound=BaseModel)


def query_model(model: type[M], **values: Any) -> M:  # noqa: ANN401 - the query parameters, as FastAPI parsed them
    """A GET operation's query parameters as its request model (the one the MCP tool takes): what the model
    refuses beyond the parameters' own checks is a 422 like FastAPI's own, at the query parameter."""
    try:
        return model(**values)
    except ValidationError as exc:
        raise RequestValidationError([{**e, "loc": ("query", *e["loc"])} for e in exc.errors()]) from exc


def serialised(answer: BaseModel) -> Response:
    """An answer as the JSON FastAPI would send for its response model, serialised once, in the route's thread:
    a returned model is validated again in another hop to the thread pool and serialised on the event loop."""
    return Response(answer.model_dump_json(by_alias=True), media_type="application/json")
