"""FastAPI dependencies as named Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from .auth import ApiKeys, Principal
from .service import Service
from .settings import ServingSettings

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="API key (or use Bearer).")
_bearer = HTTPBearer(auto_error=False, description="API key as a bearer token.")


def get_service(request: Request) -> Service:
    return request.app.state.service  # type: ignore[no-any-return]


def get_settings_dep(request: Request) -> ServingSettings:
    return request.app.state.settings  # type: ignore[no-any-return]


def get_api_keys(request: Request) -> ApiKeys:
    return request.app.state.api_keys  # type: ignore[no-any-return]


def get_principal(
    keys: Annotated[ApiKeys, Depends(get_api_keys)],
    api_key: Annotated[str | None, Security(_api_key_header)] = None,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> Principal:
    """The caller from X-API-Key or Authorization: Bearer; anonymous callers see public documents only."""
    return keys.resolve(api_key or (bearer.credentials if bearer else None))


ServiceDep = Annotated[Service, Depends(get_service)]
SettingsDep = Annotated[ServingSettings, Depends(get_settings_dep)]
PrincipalDep = Annotated[Principal, Depends(get_principal)]
