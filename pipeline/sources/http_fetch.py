"""Upstream downloads with the configuration's URL policy, limits and GitHub API headers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from secrag.errors import FetchError
from secrag.net import downloads

from .upstream import UpstreamConfig


def get_bytes(url: str, cfg: UpstreamConfig, timeout: float | None = None) -> bytes:
    """The body of url (at most cfg.limits.max_bytes), within timeout (default cfg.fetch_timeout)."""
    budget = timeout if timeout is not None else cfg.fetch_timeout
    return downloads.get_bytes(url, cfg.policy, cfg.limits, budget, cfg.api_headers)


def get_json(url: str, cfg: UpstreamConfig, timeout: float | None = None) -> Any:  # noqa: ANN401
    """The JSON document at url."""
    return parse_json(get_bytes(url, cfg, timeout), url)


def parse_json(data: bytes, where: str) -> Any:  # noqa: ANN401
    """An upstream's JSON document, or a FetchError naming `where` it came from."""
    try:
        return json.loads(data)
    except ValueError as exc:
        raise FetchError(f"{where}: not valid JSON ({exc})") from exc


def get_conditional(
    url: str, cfg: UpstreamConfig, timeout: float | None, validators: Mapping[str, str]
) -> downloads.Answer:
    """The body of url, or a 304 without one when `validators` (If-None-Match, If-Modified-Since) still hold."""
    budget = timeout if timeout is not None else cfg.fetch_timeout
    return downloads.get_conditional(url, cfg.policy, cfg.limits, budget, cfg.api_headers, validators)


def download(url: str, dest: Path, cfg: UpstreamConfig, timeout: float | None = None) -> Path:
    """Stream url to dest atomically; returns dest."""
    budget = timeout if timeout is not None else cfg.fetch_timeout
    return downloads.download(url, dest, cfg.policy, cfg.limits, budget, cfg.api_headers)
