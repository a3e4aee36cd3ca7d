"""Field-name search over the telemetry schemas: does a field's name find the record that holds it, and
how long does it take?

    python bench/fields.py --database-url postgresql://...secrag_bench... [--sample 100]

Parses the snapshot's ossem_dd and ecs, picks `--sample` field names that exactly one record holds
(seeded), and searches each (hybrid, through the API's own search code in process, caches off) as
written and misspelt (one letter dropped from its longest word), with and without the schema-sources
filter. Prints hit@1 and hit@3 (the holding record among the first results) and the p50/p95 of the
search time.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import time
from collections import Counter
from pathlib import Path

from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from serving.access.keys import ANONYMOUS
from serving.api.app import start_service, stop_service
from serving.contract.requests import SearchRequest
from serving.observability.prometheus import Exposition
from serving.settings import ServingSettings

SNAPSHOT = Path(__file__).resolve().parents[2] / "shared" / "upstream"
SCHEMAS = ["ossem_dd", "ecs"]


def misspell(name: str) -> str:
    """Drop one letter from the middle of the name's longest alphabetic run (`command_line` -> `comand_line`)."""
    runs = list(re.finditer(r"[A-Za-z]{4,}", name))
    if not runs:
        return name
    run = max(runs, key=lambda m: (len(m.group(0)), -m.start()))
    cut = run.start() + len(run.group(0)) // 2
    return name[:cut] + name[cut + 1 :]


def unique_fields(sample: int) -> list[tuple[str, str]]:
    """(field name, doc id) pairs for names only one record holds."""
    holders: dict[str, set[str]] = {}
    for name in SCHEMAS:
        for record in parse_source(default_registry()[name], SNAPSHOT / name).records:
            for field in record.identifiers:
                holders.setdefault(field, set()).add(record.doc_id)
    pairs = sorted((f, next(iter(d))) for f, d in holders.items() if len(d) == 1 and len(f) >= 6)
    return random.Random(7).sample(pairs, min(sample, len(pairs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--sample", type=int, default=100)
    args = ap.parse_args()
    pairs = unique_fields(args.sample)
    settings = ServingSettings(  # type: ignore[call-arg]
        _env_file=None, database_url=args.database_url, mcp_enabled=False, query_cache_size=0, result_cache_size=0
    )
    service = start_service(settings, Exposition())
    print(f"{len(pairs)} field names held by one record each ({Counter(d.split(':')[0] for _, d in pairs)})")
    print(f"{'query':<10}{'filter':<9}{'hit@1':>7}{'hit@3':>7}{'p50 ms':>8}{'p95 ms':>8}")
    try:
        for form in ("exact", "misspelt"):
            for filtered in (True, False):
                hits1 = hits3 = 0
                times = []
                for field, doc_id in pairs:
                    query = field if form == "exact" else misspell(field)
                    body: dict[str, object] = {"query": query, "k": 3}
                    if filtered:
                        body["filters"] = {"sources": SCHEMAS}
                    started = time.perf_counter()
                    found = service.searcher.search(SearchRequest.model_validate(body), ANONYMOUS, cache=False)
                    times.append((time.perf_counter() - started) * 1000)
                    ids = [r.doc_id for r in found.results]
                    hits1 += ids[:1] == [doc_id]
                    hits3 += doc_id in ids
                p95 = sorted(times)[int(0.95 * (len(times) - 1))]
                print(
                    f"{form:<10}{'schemas' if filtered else 'none':<9}{hits1 / len(pairs):>7.2f}"
                    f"{hits3 / len(pairs):>7.2f}{statistics.median(times):>8.1f}{p95:>8.1f}"
                )
    finally:
        stop_service(service)


if __name__ == "__main__":
    main()
