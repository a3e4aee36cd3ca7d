"""Serving settings: the shared secrag settings plus the API's own groups (env prefix SECRAG_), one module each."""

from __future__ import annotations

from functools import lru_cache

from pydantic_settings import BaseSettings

from secrag.settings import SETTINGS_CONFIG, Settings
from serving.settings.access import AccessSettings
from serving.settings.api import ApiSettings
from serving.settings.limits import LimitSettings
from serving.settings.observability import ObservabilitySettings
from serving.settings.search import SearchSettings


class ServingSettings(Settings, ApiSettings, AccessSettings, LimitSettings, SearchSettings, ObservabilitySettings):
    """Everything `secrag serve` reads: the shared settings and the API's own groups, all from SECRAG_*
    environment variables."""

    model_config = SETTINGS_CONFIG


SERVING_GROUPS: tuple[type[BaseSettings], ...] = (
    ApiSettings,
    AccessSettings,
    LimitSettings,
    SearchSettings,
    ObservabilitySettings,
)


@lru_cache(maxsize=1)
def get_serving_settings() -> ServingSettings:
    """The process-wide serving settings (cached; read on first use)."""
    return ServingSettings()
