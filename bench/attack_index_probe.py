"""What ATT&CK's version probe costs: the latest release's tag (the probe without a release index) against
index.json read at the branch head, once the head moved (a sparse checkout of index.json) and while it has not
(`git ls-remote` only), on a local git mirror of the snapshot's ATT&CK with index.json at its root; the median
and slowest of --repeat probes each, in milliseconds (git's own work, no network).

    python bench/attack_index_probe.py --upstream ../shared/upstream --repeat 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for the tests' mirror changes

from pipeline.sources.interface import UpstreamVersion  # noqa: E402
from pipeline.sources.mirror import build_mirror  # noqa: E402
from pipeline.sources.probes import probe  # noqa: E402
from pipeline.sources.registry import default_registry  # noqa: E402
from pipeline.sources.upstream import UpstreamConfig  # noqa: E402
from tests.plugins.mirror_changes import add_commit  # noqa: E402

SOURCE = "mitre_attack"


def _timed(repeat: int, run: Callable[[], UpstreamVersion]) -> tuple[str, float, float]:
    seconds, seen = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        seen = run()
        seconds.append(time.perf_counter() - started)
    assert seen is not None
    return seen.version, statistics.median(seconds) * 1000, max(seconds) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--upstream", type=Path, required=True, help="the upstream snapshot (../shared/upstream)")
    parser.add_argument("--repeat", type=int, default=10, help="probes per case")
    args = parser.parse_args()
    spec = default_registry()[SOURCE]
    with tempfile.TemporaryDirectory() as tmp:
        mirror = build_mirror(args.upstream, Path(tmp) / "mirror", specs={SOURCE: spec}, sources=[SOURCE])
        index = (args.upstream / SOURCE / "attack-stix-data" / "index.json").read_bytes()
        add_commit(mirror, SOURCE, {"index.json": index}, "index.json at the root, as upstream keeps it")
        cfg = UpstreamConfig(probe_timeout=120.0).with_mirror(mirror.repos, {}, mirror.api_base)
        tag_only = replace(spec, version_index="")
        first = probe(spec, cfg)
        cases = {
            "release tag (no version_index)": lambda: probe(tag_only, cfg),
            "index.json, head moved": lambda: probe(spec, cfg),
            "index.json, head unchanged": lambda: probe(spec, cfg, known=first),
        }
        for name, run in cases.items():
            version, median, slowest = _timed(args.repeat, run)
            print(f"{name}: {version}, median {median:.0f} ms, max {slowest:.0f} ms")  # noqa: T201


if __name__ == "__main__":
    main()
