"""/docs in a real headless Chromium with no network beyond loopback: Swagger UI comes from the API
itself (fastapi-offline), so every operation of the OpenAPI document is listed."""

from __future__ import annotations

import json
import re
import urllib.request

from tests.plugins.browser import render, visible_text


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        return str(response.read().decode())


def test_docs_page_lists_every_operation_offline(live_api: str) -> None:
    page = _get(f"{live_api}/docs")
    assets = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page)
    assert assets and all(a.startswith("/") for a in assets), assets  # the script, styles and icon are local
    spec = json.loads(_get(f"{live_api}/openapi.json"))

    dom = render(f"{live_api}/docs")

    listed = set(re.findall(r'data-path="([^"]+)"', dom))
    assert listed == set(spec["paths"]), set(spec["paths"]) ^ listed
    assert "/v1/search" in listed
    text = visible_text(dom)
    assert "secrag" in text and "Failed to load API definition" not in text
