"""FastAPI dependencies as named Annotated aliases."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from serving.access.keys import Principal
from serving.access.quotas import Caller, Gate
from serving.service import Service
from serving.settings import ServingSettings

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key (or use Bearer).")
_bearer = HTTPBearer(auto_error=False, description="API key as a bearer token.")


def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


def get_settings_dep(request: Request) -> ServingSettings:
    return request.app.state.settings  # type: ignore[no-any-return]


def get_gate(request: Request) -> Gate:
    return request.app.state.gate  # type: ignore[no-any-return]


def get_caller(
    request: Request,
    gate: Annotated[Gate, Depends(get_gate)],
    api_key: Annotated[str | None, Security(_api_key_header)] = None,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> Caller:
    """The caller from X-API-Key or Authorization: Bearer, admitted by its request rate."""
    address = request.client.host if request.client else None
    return gate.caller(api_key or (bearer.credentials if bearer else None), address)


def get_principal(caller: Annotated[Caller, Depends(get_caller)]) -> Principal:
    """What the caller may see; anonymous callers see public documents only."""
    return caller.principal


def request_slot(
    gate: Annotated[Gate, Depends(get_gate)], caller: Annotated[Caller, Depends(get_caller)]
) -> Iterator[None]:
    """One of the caller's concurrent-request slots, held for the request (every /v1 operation)."""
    with gate.slot(caller):
        yield


ServiceDep = Annotated[Service, Depends(get_service)]
SettingsDep = Annotated[ServingSettings, Depends(get_settings_dep)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
Slot = Depends(request_slot)
