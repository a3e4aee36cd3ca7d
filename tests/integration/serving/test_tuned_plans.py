"""An approved threshold is served by a running API without a restart (the tuning round trip)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from fastapi.testclient import TestClient

from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from secrag_cli.tuning_audit import apply_change, rollback
from serving.api.app import create_app
from serving.plans.plans_file import load_plans
from serving.settings import ServingSettings, default_plans_file


def _served(api: TestClient, query_type: str) -> float:
    return float(api.get("/v1/plans").json()["plans"][query_type]["score_threshold"])


def _wait_for(api: TestClient, query_type: str, value: float) -> float:
    """Poll until the API serves `value` (bounded; the tuned values are re-read every few seconds)."""
    deadline = time.monotonic() + 60
    while (served := _served(api, query_type)) != value and time.monotonic() < deadline:
        time.sleep(0.2)
    return served


def test_an_approved_threshold_is_served_without_a_restart(
    db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    config = load_plans(default_plans_file())
    q = Queries(sql_dir(), "tuning")
    with TestClient(create_app(settings_for(db_url))) as api, database.connect(db_url, autocommit=True) as conn:
        before = _served(api, "forensic")
        entry = apply_change(conn, q, config, "forensic", 0.03, who="ana", reason="fewer weak hits")
        assert _wait_for(api, "forensic", 0.03) == 0.03
        mcp = api.post(
            "/mcp/",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_plans", "arguments": {}}},
            headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"},
        )
        result = mcp.json()["result"]
        listed = result.get("structuredContent") or json.loads(result["content"][0]["text"])
        assert listed["plans"]["forensic"]["score_threshold"] == 0.03  # MCP serves the same plans
        rollback(conn, q, config, entry.id, who="ana", reason="undo")
        assert _wait_for(api, "forensic", before) == before
