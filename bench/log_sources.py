"""What share of ATT&CK analytics' log sources the shipped mapping table (serving/coverage/log_sources.yaml) resolves
to Sigma logsources, Elastic indices, Splunk data sources, ECS event categories or telemetry schemas.

    python bench/log_sources.py [--attack ../shared/upstream/mitre_attack] [--unresolved 15]

Reads only the three bundles ({enterprise,mobile,ics}-attack/*.json, plain JSON) and the table: per domain and in
all, the analytics (revoked and deprecated ones left out), their log-source references (name and channel), the
share of references resolved, the share of analytics with at least one resolved log source and with all of them
resolved, the distinct names the table knows, and the share of references mapped to a rule set's name (a Sigma
logsource, an Elastic index or a Splunk data source) and to a schema; then the commonest unresolved names.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from serving.coverage.log_sources import LogSourceTable, shipped_log_sources

DOMAINS = ("enterprise", "mobile", "ics")
DEFAULT_ATTACK = Path(__file__).resolve().parents[2] / "shared" / "upstream" / "mitre_attack"


def analytics(bundle: Path) -> list[dict[str, Any]]:
    """The bundle's active x-mitre-analytic objects."""
    objects = json.loads(bundle.read_text(encoding="utf-8"))["objects"]
    return [
        o
        for o in objects
        if o.get("type") == "x-mitre-analytic" and not o.get("revoked") and not o.get("x_mitre_deprecated")
    ]


def measure(label: str, found: list[dict[str, Any]], table: LogSourceTable, missing: Counter[str]) -> None:
    refs = resolved = any_resolved = all_resolved = to_rules = to_schemas = 0
    names: set[str] = set()
    known: set[str] = set()
    for analytic in found:
        hits = []
        for ref in analytic.get("x_mitre_log_source_references", []):
            mapped = table.resolve(ref["name"], ref.get("channel"))
            ok = mapped.resolved
            hits.append(ok)
            to_rules += bool(mapped.sigma or mapped.elastic or mapped.splunk)
            to_schemas += bool(mapped.schemas)
            names.add(ref["name"])
            if ok:
                known.add(ref["name"])
            else:
                missing[ref["name"]] += 1
        refs += len(hits)
        resolved += sum(hits)
        any_resolved += any(hits)
        all_resolved += bool(hits) and all(hits)
    n = len(found)
    print(
        f"{label:<10} analytics {n:>5}  references {refs:>5}  resolved {resolved:>5} ({pct(resolved, refs)})  "
        f"analytics with one resolved {any_resolved:>5} ({pct(any_resolved, n)})  all resolved {all_resolved:>5} "
        f"({pct(all_resolved, n)})  names {len(known)}/{len(names)}  references to a rule set's name "
        f"{pct(to_rules, refs)}, to a schema {pct(to_schemas, refs)}"
    )


def pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attack", type=Path, default=DEFAULT_ATTACK, help="the mitre_attack upstream folder")
    parser.add_argument("--unresolved", type=int, default=15, help="how many unresolved names to list")
    args = parser.parse_args()
    table = shipped_log_sources()
    every: list[dict[str, Any]] = []
    missing: Counter[str] = Counter()
    for domain in DOMAINS:
        found = [a for bundle in sorted((args.attack / f"{domain}-attack").glob("*.json")) for a in analytics(bundle)]
        measure(domain, found, table, Counter())
        every.extend(found)
    measure("all", every, table, missing)
    listed = ", ".join(f"{name} ({n})" for name, n in missing.most_common(args.unresolved))
    print(f"unresolved, most used first: {listed}")


if __name__ == "__main__":
    main()
