"""POST /v1/coverage latency (p50/p90 over --runs) for one technique, a group's techniques and a whole tactic.

    python bench/coverage.py --database-url postgresql://.../secrag_bench   # the API in process on that store
    python bench/coverage.py --url http://127.0.0.1:8000 [--api-key KEY]   # a served API
        [--runs 21] [--technique T1059.001] [--group G0032] [--tactic defense-evasion] [--platforms windows]

In process the API runs as `secrag serve` would, with its caches and quotas off (bench/quality.py's
api_settings). Each case is asked once to warm the pool and the plan cache, then --runs times; a line gives
the techniques the answer covers, the response size, the client's p50/p90 and the server's own `took_ms`
p50/p90 (the statement and assembly, without HTTP and JSON). The default group, G0032 (Lazarus Group), uses
93 techniques in the ATT&CK snapshot (its document's and its procedure examples' labels; the line prints how
many the store gives); the tactic is asked on all platforms and on --platforms.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import httpx
from plans import percentile
from quality import Poster, api_settings


def timed(http: Poster, body: dict[str, Any]) -> tuple[float, dict[str, Any], int]:
    """(client milliseconds, the answer, its size in bytes)."""
    started = time.perf_counter()
    response = http.post("/v1/coverage", json=body)
    elapsed = (time.perf_counter() - started) * 1000
    response.raise_for_status()
    return elapsed, response.json(), len(response.content)


def measure(http: Poster, label: str, body: dict[str, Any], runs: int) -> None:
    _, answer, size = timed(http, body)  # warm-up
    client, server = [], []
    for _ in range(runs):
        elapsed, answer, size = timed(http, body)
        client.append(elapsed)
        server.append(float(answer["took_ms"]))
    n = len(answer["techniques"])
    print(  # noqa: T201 - a bench prints
        f"{label:<44} {n:>4} techniques {size / 1024:>7.1f} KiB  "
        f"client p50 {percentile(client, 50):7.1f} ms p90 {percentile(client, 90):7.1f} ms  "
        f"server p50 {percentile(server, 50):7.1f} ms p90 {percentile(server, 90):7.1f} ms"
    )


def run(http: Poster, args: argparse.Namespace) -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        (f"technique {args.technique}", {"techniques": [args.technique]}),
        (f"technique {args.technique}, no layer", {"techniques": [args.technique], "layer": False}),
        (f"group {args.group}", {"actor": args.group}),
        (f"group {args.group}, folded", {"actor": args.group, "fold_subtechniques": True}),
        (f"tactic {args.tactic}", {"tactic": args.tactic}),
        (f"tactic {args.tactic} on {','.join(args.platforms)}", {"tactic": args.tactic, "platforms": args.platforms}),
    ]
    print(f"{args.runs} runs per case, after one warm-up; top 3 items per kind")  # noqa: T201
    for label, body in cases:
        measure(http, label, body, args.runs)
    _, answer, _ = timed(http, {"actor": args.group, "layer": False})
    detected = sum(1 for t in answer["techniques"] if t["detections"]["count"])
    print(  # noqa: T201
        f"group {args.group}: {len(answer['techniques'])} techniques, {detected} with a detection; "
        f"gaps {json.dumps({k: len(v) for k, v in answer['gaps'].items()})}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--database-url", help="A store: the API runs in process on it.")
    target.add_argument("--url", help="A served API, e.g. http://127.0.0.1:8000.")
    parser.add_argument("--api-key", default=None, help="With --url: the X-API-Key to send.")
    parser.add_argument("--runs", type=int, default=21, help="Timed requests per case.")
    parser.add_argument("--technique", default="T1059.001")
    parser.add_argument("--group", default="G0032", help="An ATT&CK group, software or campaign id.")
    parser.add_argument("--tactic", default="defense-evasion", help="Short name (TA0005 is defense-evasion).")
    parser.add_argument("--platforms", type=lambda s: s.split(","), default=["windows"])
    args = parser.parse_args()
    if args.database_url:
        from fastapi.testclient import TestClient

        from serving.api.app import create_app

        with TestClient(create_app(api_settings(args.database_url))) as api:
            run(api, args)
    else:
        headers = {"X-API-Key": args.api_key} if args.api_key else {}
        with httpx.Client(base_url=args.url, timeout=120, headers=headers) as http:
            run(http, args)


if __name__ == "__main__":
    main()
