"""Thin routers, one per resource; each takes the parts of the service it uses (serving/api/deps.py)."""

from __future__ import annotations

from typing import Any, TypeVar

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
