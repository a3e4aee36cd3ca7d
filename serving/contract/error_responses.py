"""The error body every /v1 operation may answer, and the OpenAPI `responses` table declaring it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorResponse(BaseModel):
    detail: Any = Field(description="A safe message, or the list of field errors (loc, msg, type).")
    kind: str = Field(
        description="A stable word for the kind of error (e.g. not_found, invalid_field, validation, "
        "too_many_requests, unknown_api_key, statement_timeout, database_unavailable, internal)."
    )


# What every /v1 operation may answer besides its own (serving/api/app.py declares them on the routers):
# an unparseable body (400), the gate (serving/access/quotas.py: 401, 429), the body limit (413),
# validation (422) and the database (503 while down, 504 for a cancelled statement).
GATED_STATUSES = (400, 401, 413, 422, 429, 503, 504)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` declaring the error body for these statuses: the one table every router uses."""
    return {status: {"model": ErrorResponse} for status in statuses}
