"""`secrag run` as the freshness bench starts it: a data directory whose mirror holds some sources, waited on
until healthy and converged, then asked through Dagster's GraphQL and the API."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

from secrag.db import database

from lib.processes import SECRAG, free_port, post_json, request

ACTIVE_RUNS = """{ runsOrError(filter: {statuses: [QUEUED, NOT_STARTED, STARTING, STARTED]})
  { ... on Runs { results { runId } } } }"""
STORE = """SELECT (SELECT count(*) FROM chunks c WHERE NOT EXISTS (SELECT 1 FROM embeddings e JOIN embedding_models m
  ON m.model_id = e.model_id AND m.active WHERE e.content_hash = c.content_hash)),
  (SELECT count(*) FROM embedding_models WHERE active), (SELECT json_object_agg(name, current_version) FROM sources)"""


def snapshot_of(upstream: Path, names: list[str], target: Path) -> Path:
    """A snapshot folder holding only these sources' folders (links to the real ones)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in [*names, "MANIFEST.json"]:
        if not (target / name).exists():
            (target / name).symlink_to(upstream / name)
    return target


def run_env(data_dir: Path, snapshot: Path, model_cache_dir: Path | None) -> dict[str, str]:
    """This environment without SECRAG_*, with the bench's data and mirror and the anonymous rate off (the bench
    polls the API twice a second)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env.update(SECRAG_DATA_DIR=str(data_dir / "data"), SECRAG_UPSTREAM_MIRROR=str(snapshot), HF_HUB_OFFLINE="1",
               SECRAG_ANONYMOUS_RATE_PER_MINUTE="0")  # fmt: skip
    if model_cache_dir:
        env["SECRAG_MODEL_CACHE_DIR"] = str(model_cache_dir.resolve())
    return env


class Topology:
    """`secrag run` on free ports, its log in the data directory's run.log."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        ports = {"--dagster-port": free_port(), "--api-port": free_port(), "--code-server-port": free_port()}
        self.dagster, self.api = (f"http://127.0.0.1:{ports[flag]}" for flag in ("--dagster-port", "--api-port"))
        args = ["run", *(a for flag, port in ports.items() for a in (flag, str(port)))]
        log = (workdir / "run.log").open("ab")
        self.proc = subprocess.Popen([*SECRAG, *args], env=env, cwd=workdir, stdout=log, stderr=log,
                                     start_new_session=True)  # fmt: skip

    def graphql(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """The `data` of a query to the Dagster webserver, {} when it fails."""
        answer = post_json(f"{self.dagster}/graphql", {"query": query, "variables": variables or {}})
        return dict(answer.get("data") or {})

    def converged(self, url: str, sources: list[str], timeout: float) -> None:
        """Waits (its state said about once a minute) until the API is ready, every source published, every chunk
        of the active model embedded and no run queued or running (which needs the daemon's sensors)."""
        started, last = time.monotonic(), ""
        while self.proc.poll() is None:
            with database.connect(url) as conn:
                missing, active, published = conn.execute(STORE).fetchone()  # type: ignore[misc]
            runs = (self.graphql(ACTIVE_RUNS).get("runsOrError") or {}).get("results") or []
            waiting = [s for s in sources if not (published or {}).get(s)]
            elapsed = time.monotonic() - started
            if request(f"{self.api}/readyz")[0] == 200 and not waiting and not missing and active == 1 and not runs:
                print(f"converged in {elapsed:.0f} s")
                return
            said = f"unpublished {waiting}, chunks without vectors {missing}, active model {active}, runs {len(runs)}"
            if said != last and int(elapsed) % 60 < 5:
                print(f"  waiting for convergence ({elapsed:.0f} s): {said}")
                last = said
            if elapsed > timeout:
                raise SystemExit(f"no convergence after {timeout:.0f} s: {said}")
            time.sleep(5)
        raise SystemExit(f"secrag run exited with {self.proc.returncode} while waiting for convergence")

    def hit(self, source: str, token: str, title: str, mode: str) -> bool:
        """A full-text search for the token, or a vector search for the title, finds the new record."""
        body = {"query": token if mode == "fts" else title, "mode": mode, "k": 10, "filters": {"sources": [source]}}
        titles = [r.get("title") or "" for r in post_json(f"{self.api}/v1/search", body).get("results") or []]
        return any(token in t for t in titles) if mode == "fts" else title in titles
