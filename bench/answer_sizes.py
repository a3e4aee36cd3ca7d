"""The largest coverage answers (REST and MCP) and the MCP budget's fitting: answer bytes, time, CPU, peak RSS.

    python bench/answer_sizes.py build --database-url postgresql://.../secrag_answers   # once: a store to ask
    python bench/answer_sizes.py measure --database-url postgresql://.../secrag_answers [--tactic defense-evasion]

`build` migrates the (existing, empty) database and publishes ATT&CK's three domains, its detection strategies
and analytics, Sigma and Atomic Red Team from --upstream as the pipeline does, without vectors (coverage needs
none): a few minutes of one core. `measure` runs each case in a child process of its own, so its peak RSS is the
case's: the API in process (TestClient over create_app, caches, quotas and warm-up off), one request, and prints
the answer's bytes, the request's wall and CPU seconds, the process's peak RSS before and after the request, and
what the answer says of its size (a page, a budget note). Cases: a tactic with analytics over REST and as the MCP
`coverage` tool (no max_chars given), the same tool with a budget, a `technique_layer` of every Enterprise
technique (REST), and the MCP budget's fitting (serving/mcp/budget.py `fit`) of a coverage-shaped answer of
about 1 MB and 5 MB to 20,000 characters, in process without the API.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

MCP_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-06-18",
}
SOURCES = {  # source -> its folder under --upstream
    "mitre_attack": "mitre_attack",
    "mitre_attack_mobile": "mitre_attack",
    "mitre_attack_ics": "mitre_attack",
    "mitre_attack_detections": "mitre_attack",
    "sigma": "sigma",
    "atomic": "atomic",
}
BUNDLES = ("enterprise-attack/enterprise-attack.json", "mobile-attack/mobile-attack.json", "ics-attack/ics-attack.json")
CASES = ("rest_tactic", "rest_tactic_pages", "mcp_tactic", "mcp_tactic_budget", "rest_layer", "fit_1mb", "fit_5mb")


def build(url: str, upstream: Path) -> None:
    from pipeline.chunking import ChunkConfig
    from pipeline.refresh_inputs import source_row
    from pipeline.sources.mitre_lookup import techniques_from_bundle
    from pipeline.sources.parsing import parse_source
    from pipeline.sources.registry import default_registry
    from pipeline.store import Store
    from secrag.db import database, migrations
    from secrag.files.package_data import sql_dir

    registry, store = default_registry(), Store(sql_dir())
    with database.connect(url, autocommit=True) as conn:
        migrations.migrate(conn, sql_dir())
        techniques = [t for b in BUNDLES for t in techniques_from_bundle(upstream / "mitre_attack" / b)]
        store.replace_techniques(conn, techniques, "bench")
        for source, folder in SOURCES.items():
            spec = registry[source]
            parsed = parse_source(spec, upstream / folder, version="bench")
            store.register_source(conn, source_row(spec))
            result = store.publish(
                conn, source=source, version="bench", records=parsed.records, lookup={}, chunking=ChunkConfig()
            )
            print(f"{source}: {result.status}, {len(parsed.records)} records")  # noqa: T201 - a bench prints


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _app(url: str) -> Any:  # noqa: ANN401 - a TestClient
    from fastapi.testclient import TestClient

    from serving.api.app import create_app
    from serving.settings import ServingSettings

    settings = ServingSettings(  # type: ignore[call-arg]
        _env_file=None,
        database_url=url,
        warm_up=False,
        result_cache_size=0,
        query_cache_size=0,
        anonymous_rate_per_minute=0,
        anonymous_heavy_concurrency=0,
    )
    return TestClient(create_app(settings))


def _said(answer: dict[str, Any]) -> str:
    """What the answer says of its own size."""
    told = {k: answer[k] for k in ("pages", "total", "truncated", "next_cursor", "budget") if k in answer}
    told |= {"techniques": len(answer.get("techniques", []))} if "techniques" in answer else {}
    return json.dumps(told)[:300]


def _coverage_case(case: str, url: str, tactic: str) -> dict[str, Any]:
    with _app(url) as client:
        body: dict[str, Any] = {"tactic": tactic, "analytics": True}
        if case == "rest_layer":
            from secrag.db import database

            with database.connect(url) as conn:
                ids = [
                    r[0] for r in conn.execute("SELECT id FROM mitre_techniques WHERE id LIKE 'T1%%' AND NOT revoked")
                ]
            layer = {
                "name": "every technique",
                "domain": "enterprise-attack",
                "versions": {"layer": "4.5", "navigator": "5.1.0"},
                "techniques": [{"techniqueID": t} for t in ids[:2000]],
            }
            body = {"technique_layer": layer, "analytics": True}
        client.post("/v1/coverage", json={"techniques": ["T1003"]})  # the pool and catalog, outside the figures

        def once() -> str:
            if case == "rest_tactic_pages":  # every page, following next_cursor; the answers' bytes summed
                texts, cursor = [], None
                while True:
                    response = client.post("/v1/coverage", json={**body, **({"cursor": cursor} if cursor else {})})
                    assert response.status_code == 200, response.text[:500]
                    texts.append(response.text)
                    cursor = response.json().get("next_cursor")
                    if cursor is None:
                        return json.dumps({"pages": len(texts), "bytes": sum(len(t.encode()) for t in texts)})
            if case.startswith("rest"):
                response = client.post("/v1/coverage", json=body)
                assert response.status_code == 200, response.text[:500]
                return str(response.text)
            arguments = {**body, **({"max_chars": 20000} if case == "mcp_tactic_budget" else {})}
            message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
            message["params"] = {"name": "coverage", "arguments": arguments}
            response = client.post("/mcp/", json=message, headers=MCP_HEADERS)
            assert response.status_code == 200, response.text[:500]
            result = response.json()["result"]
            assert not result.get("isError"), str(result)[:500]
            return str(result["content"][0]["text"])

        return _timed(once, lambda text: _said(json.loads(text)))


def _timed(once: Any, said: Any) -> dict[str, Any]:  # noqa: ANN401
    """One timed run (wall and CPU seconds), then one traced (the peak of Python's allocations during it)."""
    before = _rss_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    text = once()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    rss = _rss_mib()
    tracemalloc.start()
    once()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    paged = json.loads(text) if text.startswith('{"pages"') else None
    return {
        "bytes": paged["bytes"] if paged else len(text.encode()),
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_before_mib": before,
        "rss_mib": rss,
        "peak_mib": peak,
        "said": said(text),
    }


def coverage_shaped(target_bytes: int) -> dict[str, Any]:
    """A coverage answer of about target_bytes as compact JSON: techniques with items, analytics and a layer."""

    def kind(i: int) -> dict[str, Any]:
        items = [
            {"doc_id": f"sigma:rule-{i}-{j}", "title": f"Rule {j} of {i} " + "x" * 40, "source": "sigma"}
            for j in range(3)
        ]
        return {"count": 12, "by_source": {"sigma": 9, "elastic": 3}, "top": items}

    def technique(i: int) -> dict[str, Any]:
        refs = [
            {"name": "WinEventLog:Sysmon", "channel": f"EventCode={j}", "data_component": "Process"} for j in range(4)
        ]
        need = {"analytic_id": f"AN{i:04d}", "doc_id": f"d:AN{i:04d}", "strategy": "DET0001", "log_sources": refs}
        return {
            "technique_id": f"T{1000 + i}",
            "name": f"Technique {i} " + "y" * 30,
            "domain": "enterprise",
            **{k: kind(i) for k in ("detections", "tests", "countermeasures", "notes")},
            "telemetry": [{"logsource": {"product": "windows"}, "detections": 3, "schemas": ["ossem:x"]}] * 3,
            "analytics": [{"platform": p, "analytics": [need] * 3} for p in ("Windows", "Linux", "macOS")],
        }

    one = len(json.dumps(technique(0), separators=(",", ":")))
    n = max(1, target_bytes // one)
    layer = {"name": "l", "techniques": [{"techniqueID": f"T{1000 + i}", "comment": "z" * 120} for i in range(n)]}
    return {"techniques": [technique(i) for i in range(n)], "gaps": {"no_detection": []}, "layer": layer}


def _fit_case(case: str) -> dict[str, Any]:
    from serving.mcp import budget
    from serving.mcp.priorities import priority

    answer = coverage_shaped(1_000_000 if case == "fit_1mb" else 5_000_000)
    whole = budget.compact(answer)
    fitted: dict[str, Any] = {}

    def once() -> str:
        fitted.update(budget.fit(answer, 20000, priority("coverage")))
        return whole

    return _timed(once, lambda _: f"fitted to {budget.size(fitted)} chars: {json.dumps(fitted.get('budget'))[:200]}")


def measure(url: str, tactic: str) -> None:
    print(f"{'case':<18} {'answer':>12} {'wall s':>7} {'cpu s':>7} {'RSS MiB':>15} {'peak MiB':>8}  says")  # noqa: T201
    for case in CASES:
        child = subprocess.run(  # noqa: S603 - this script, one case
            [sys.executable, __file__, "case", case, "--database-url", url, "--tactic", tactic],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode:
            print(f"{case:<18} failed: {child.stderr.strip().splitlines()[-1:]}")  # noqa: T201
            continue
        r = json.loads(child.stdout.strip().splitlines()[-1])
        print(  # noqa: T201
            f"{case:<18} {r['bytes']:>12,} {r['wall_s']:>7.2f} {r['cpu_s']:>7.2f} "
            f"{r['rss_before_mib']:>6.0f} -> {r['rss_mib']:>5.0f} {r['peak_mib']:>8.1f}  {r['said']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("build", "measure", "case"))
    parser.add_argument("case", nargs="?", choices=CASES, help="With `case`: the one case to run (measure runs each).")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--upstream", type=Path, default=Path("../shared/upstream"))
    parser.add_argument("--tactic", default="defense-evasion")
    args = parser.parse_args()
    if args.action == "build":
        build(args.database_url, args.upstream)
    elif args.action == "measure":
        measure(args.database_url, args.tactic)
    else:
        result = (
            _fit_case(args.case)
            if args.case.startswith("fit")
            else _coverage_case(args.case, args.database_url, args.tactic)
        )
        print(json.dumps(result))  # noqa: T201


if __name__ == "__main__":
    main()
