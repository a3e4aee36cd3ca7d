"""An approved threshold is served by a running API without a restart (the tuning round trip)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping

from fastapi.testclient import TestClient

from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from secrag_cli.tuning_audit import apply_change, rollback
from serving.api.app import create_app
from serving.plans.plans_file import load_plans
from serving.settings import ServingSettings
from serving.settings.api import default_plans_file

HUNG = 120.0  # bounds a hung test only: the waits below are for events


def _served(api: TestClient, query_type: str) -> float:
    return float(api.get("/v1/plans").json()["plans"][query_type]["score_threshold"])


class _Reads:
    """The API's reads of the tuned thresholds (its TunedPlans' `read`), numbered as they start."""

    def __init__(self, api: TestClient) -> None:
        self._plans, self._read = api.app.state.plans, api.app.state.plans.read  # type: ignore[attr-defined]
        self._lock, self.started, self.finished = threading.Lock(), 0, list[int]()
        self._plans.read = self._counted

    def _counted(self) -> Mapping[str, float]:
        with self._lock:
            self.started += 1
            number = self.started
        rows = self._read()
        with self._lock:
            self.finished.append(number)
        return rows

    def served_after(self, api: TestClient, query_type: str) -> float:
        """What the API serves once a read that started after now has ended (requests make the reads: the
        values are re-read on a request once they are older than TUNED_TTL)."""
        with self._lock:
            mark = self.started
        deadline = time.monotonic() + HUNG
        while not any(n > mark for n in self.finished):
            assert time.monotonic() < deadline, "the API did not read the tuned thresholds again"
            _served(api, query_type)
            time.sleep(0.05)
        return _served(api, query_type)


def test_an_approved_threshold_is_served_without_a_restart(
    db_url: str, settings_for: Callable[..., ServingSettings]
) -> None:
    config = load_plans(default_plans_file())
    q = Queries(sql_dir(), "tuning")
    with TestClient(create_app(settings_for(db_url))) as api, database.connect(db_url, autocommit=True) as conn:
        reads = _Reads(api)
        before = _served(api, "forensic")
        entry = apply_change(conn, q, config, "forensic", 0.03, who="ana", reason="fewer weak hits")
        assert reads.served_after(api, "forensic") == 0.03  # the first read of the store after the approval
        mcp = api.post(
            "/mcp/",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_plans", "arguments": {}}},
            headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"},
        )
        result = mcp.json()["result"]
        listed = result.get("structuredContent") or json.loads(result["content"][0]["text"])
        assert listed["plans"]["forensic"]["score_threshold"] == 0.03  # MCP serves the same plans
        rollback(conn, q, config, entry.id, who="ana", reason="undo")
        assert reads.served_after(api, "forensic") == before
