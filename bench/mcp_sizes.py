"""Response sizes of every MCP tool, whole and within a budget (serving/mcp/budget.py).

    python bench/mcp_sizes.py --database-url postgresql://... [--budget 2000] [--budget 1000]

Calls each tool once through the official client connected in process (mcp.client.Client) to the MCP
server over the API's own Service, as `secrag mcp` builds it, with a typical request, without
`max_chars` and with each budget. Prints, per tool, the characters of the text content a client reads
(the whole answer is pretty-printed JSON, as before budgets; a budgeted one is compact JSON), the whole
answer as compact JSON, and per budget the budgeted size, the milliseconds of the call and what was
cut (d: lists trimmed, s: texts shortened, o: fields left out).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.types import CallToolResult, TextContent

from serving.access.keys import load_api_keys
from serving.access.quotas import Gate
from serving.api.app import start_service, stop_service
from serving.mcp.budget import size
from serving.mcp.tools import build_mcp
from serving.observability.prometheus import Exposition
from serving.plans.plans_file import load_plans
from serving.settings import ServingSettings

REPORT = (
    "The actor gained access through a phishing e-mail with a malicious macro. It ran PowerShell to download "
    "a second stage, dumped LSASS memory with Mimikatz to harvest credentials, and moved laterally with PsExec "
    "and remote services. Scheduled tasks kept it on the hosts; data was staged in a RAR archive and sent out "
    "over HTTPS to a cloud storage service."
)
CASES: dict[str, dict[str, Any]] = {
    "search": {"query": "credential dumping from lsass memory"},
    "fts": {"query": "mimikatz"},
    "vector": {"query": "dump credentials from memory"},
    "hybrid": {"query": "CVE-2021-44228"},
    "fuzzy": {"query": "mimikatzz"},
    "plan": {"query": "how do attackers dump lsass memory"},
    "explain": {"query": "T1003"},
    "map": {"text": REPORT},
    "coverage": {"techniques": ["T1003", "T1003.001", "T1059.001", "T1021.002", "T1053.005"]},
    "list_plans": {},
    "get_documents": {"ids": ["mitre_attack:T1003", "capec:CAPEC-66", "cisa_kev:CVE-2021-44228"]},
    "get_document": {"doc_id": "mitre_attack:T1003"},
    "get_chunks": {"ids": ["<chunk>"]},
    "get_chunk": {"chunk_id": "<chunk>"},
    "get_upstream": {"doc_id": "capec:CAPEC-66"},
    "get_upstreams": {"doc_ids": ["capec:CAPEC-66", "cisa_kev:CVE-2021-44228", "mitre_attack:T1003"]},
    "changes": {},
    "list_sources": {},
    "stats": {},
}


def _text(result: Any) -> str:  # noqa: ANN401
    assert isinstance(result, CallToolResult) and isinstance(result.content[0], TextContent)
    assert not result.is_error, result.content[0].text
    return result.content[0].text


def _cuts(note: dict[str, Any] | None) -> str:
    if not note:
        return "-"
    parts = [f"d:{k}-{v}" for k, v in note.get("dropped", {}).items()]
    parts += [f"s:{k}<={v}" for k, v in note.get("shortened", {}).items()]
    parts += [f"o:{k}" for k in note.get("omitted", [])]
    return " ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--budget", type=int, action="append", help="max_chars (repeatable; default 2000)")
    args = ap.parse_args()
    budgets = args.budget or [2000]
    settings = ServingSettings(
        _env_file=None,  # type: ignore[call-arg]
        database_url=args.database_url,
        warm_up=False,
        result_cache_size=0,
        anonymous_rate_per_minute=0,
        anonymous_heavy_concurrency=0,
    )
    service = start_service(settings, Exposition())
    gate = Gate(load_api_keys(settings.api_keys_file), settings)
    plans = load_plans(settings.plans_file)
    server = build_mcp(lambda: service, gate, lambda: plans, limits=service.limits)

    async def run() -> None:
        async with Client(server) as client:
            await table(client)

    async def table(client: Client) -> None:
        found = json.loads(_text(await client.call_tool("search", {"query": "T1003", "k": 1})))
        chunk = found["results"][0]["chunk_id"]
        heads = "".join(f" {f'<= {b}':>8} {'ms':>5}  cut" for b in budgets)
        print(f"{'tool':<14} {'whole':>8} {'compact':>8}{heads}")  # noqa: T201 - a bench prints
        for tool, case in CASES.items():
            arguments = {k: [chunk] if v == ["<chunk>"] else chunk if v == "<chunk>" else v for k, v in case.items()}
            whole = _text(await client.call_tool(tool, arguments))
            row = f"{tool:<14} {len(whole):>8} {size(json.loads(whole)):>8}"
            for budget in budgets:
                started = time.perf_counter()
                cut = _text(await client.call_tool(tool, {**arguments, "max_chars": budget}))
                took = (time.perf_counter() - started) * 1000
                row += f" {len(cut):>8} {took:>5.0f}  {_cuts(json.loads(cut).get('budget'))}"
            print(row)  # noqa: T201

    try:
        anyio.run(run)
    finally:
        stop_service(service)


if __name__ == "__main__":
    main()
