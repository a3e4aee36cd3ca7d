"""ATT&CK without what spec v4 removes: each ATT&CK source parsed from the snapshot's v18.1 bundles and from the
same bundles stripped of every deprecated field and object (tests/plugins/attack_spec_v4.py), with its records per
domain and kind, how many differ, and the deprecated names each parse reports absent (`attack_fields_absent`).

    python bench/attack_spec_v4.py --upstream ../shared/upstream
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' bundle stripper

from pipeline.sources.parsers.stix.deprecated import NOTE  # noqa: E402
from pipeline.sources.parsing import parse_source  # noqa: E402
from pipeline.sources.records import ParseOutcome, Record  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from tests.plugins.attack_spec_v4 import BUNDLES, strip_bundle  # noqa: E402

SOURCES = ("mitre_attack", "mitre_attack_mobile", "mitre_attack_ics", "mitre_attack_detections")


def _fact(r: Record) -> tuple[object, ...]:
    return (r.title, r.body, r.techniques, r.platforms, r.tags, r.metadata)


def _kinds(outcome: ParseOutcome) -> str:
    counts = Counter(f"{r.metadata.get('domain')}/{r.metadata.get('kind')}" for r in outcome.records)
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, required=True, help="the upstream snapshot (../shared/upstream)")
    args = parser.parse_args()
    stored = args.upstream / "mitre_attack"
    registry = default_registry()
    with tempfile.TemporaryDirectory() as tmp:
        stripped = Path(tmp)
        for rel in BUNDLES:
            data = (stored / rel).read_bytes()
            (stripped / rel).parent.mkdir(parents=True)
            (stripped / rel).write_bytes(strip_bundle(data))
        for source in SOURCES:
            before, after = parse_source(registry[source], stored), parse_source(registry[source], stripped)
            facts = {r.doc_id: _fact(r) for r in before.records}
            differ = sum(1 for r in after.records if facts.get(r.doc_id) != _fact(r))
            print(f"{source}: {len(before.records)} -> {len(after.records)} records, {differ} differ")  # noqa: T201
            print(f"  v18.1:    {_kinds(before)}")  # noqa: T201
            print(f"  stripped: {_kinds(after)}")  # noqa: T201
            print(f"  absent in v18.1:    {', '.join(before.notes.get(NOTE, ()))}")  # noqa: T201
            print(f"  absent in stripped: {', '.join(after.notes.get(NOTE, ()))}")  # noqa: T201


if __name__ == "__main__":
    main()
