"""lookups/mitre_techniques through Dagster: the techniques of the three domains' sources, each with its domain."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from pipeline.assets.keys import LOOKUP_KEY, source_key
from pipeline.definitions import build_definitions
from pipeline.lookup_read import read_lookup
from pipeline.sources.registry import default_registry
from secrag.db import database
from secrag.db.queries import Queries
from secrag.files.package_data import sql_dir
from secrag.settings import Settings
from tests.plugins.graph import clone, drop, harness, make_mirror
from tests.plugins.upstream import SNAPSHOT

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")
SOURCES = ("mitre_attack", "mitre_attack_mobile", "mitre_attack_ics")


def _snapshot(small_snapshot: Path, target: Path) -> Path:
    """The small snapshot's Enterprise subset beside the real Mobile and ICS bundles (one ATT&CK folder)."""
    shutil.copytree(small_snapshot / "mitre_attack", target / "mitre_attack")
    for domain in ("mobile", "ics"):
        rel = Path(f"{domain}-attack") / f"{domain}-attack.json"
        (target / "mitre_attack" / rel).parent.mkdir(parents=True)
        shutil.copyfile(SNAPSHOT / "mitre_attack" / rel, target / "mitre_attack" / rel)
    return target


def test_the_lookup_holds_every_domain_s_techniques(
    pg_server_url: str, template_db: str, small_snapshot: Path, tmp_path: Path
) -> None:
    specs = {name: default_registry()[name] for name in SOURCES}
    name = clone(pg_server_url, template_db)
    try:
        url = database.with_database(pg_server_url, name)
        mirror = make_mirror(_snapshot(small_snapshot, tmp_path / "snapshot"), tmp_path / "mirror", specs)
        h = harness(url, mirror, tmp_path / "work", specs)
        graph = h.defs.resolve_asset_graph()
        assert set(graph.get(LOOKUP_KEY).parent_keys) == {source_key(s) for s in SOURCES}
        assert all(LOOKUP_KEY not in graph.get(source_key(s)).parent_keys for s in SOURCES)  # no cycle
        selection = " or ".join(f'key:"{k.to_user_string()}"' for k in [*map(source_key, SOURCES), LOOKUP_KEY])
        result = h.materialize(selection)
        assert result.success
        [event] = result.asset_materializations_for_node(LOOKUP_KEY.to_python_identifier())
        facts = {k: v.value for k, v in event.metadata.items()}
        assert (facts["active_mobile"], facts["active_ics"]) == (124, 83)
        with h.connect() as conn:
            counts = dict(conn.execute("SELECT domain, count(*) FROM mitre_techniques GROUP BY domain").fetchall())
            rows = {
                r[0]: r[1:]
                for r in conn.execute(
                    "SELECT id, domain, full_name, tactics, platforms, version IS NOT NULL FROM mitre_techniques"
                    " WHERE id IN ('T1624.001', 'T0800', 'T1425')"
                )
            }
        assert counts["mobile"] == 190 and counts["ics"] == 95 and counts["enterprise"] > 20
        assert rows["T1624.001"][:3] == ("mobile", "Event Triggered Execution: Broadcast Receivers", ["persistence"])
        assert rows["T0800"] == ("ics", "Activate Firmware Update Mode", ["inhibit-response-function"], ["ics"], True)
        assert rows["T1425"][0] == "mobile"  # revoked long ago, kept as a redirect
    finally:
        drop(pg_server_url, name)


def test_without_the_other_domains_the_lookup_reads_enterprise_alone() -> None:
    specs = {name: spec for name, spec in default_registry().items() if name not in SOURCES[1:]}
    defs = build_definitions(Settings(_env_file=None), specs, [])
    assert set(defs.resolve_asset_graph().get(LOOKUP_KEY).parent_keys) == {dg.AssetKey(["sources", "mitre_attack"])}


def test_a_domain_not_published_yet_waits(
    pg_server_url: str, template_db: str, small_snapshot: Path, tmp_path: Path
) -> None:
    """read_lookup (the asset's input) reads the published domains and names the others as waiting."""
    specs = {name: default_registry()[name] for name in SOURCES}
    name = clone(pg_server_url, template_db)
    try:
        mirror = make_mirror(_snapshot(small_snapshot, tmp_path / "snapshot"), tmp_path / "mirror", specs)
        h = harness(database.with_database(pg_server_url, name), mirror, tmp_path / "work", specs)
        assert h.materialize('key:"sources/mitre_attack"').success
        with h.connect() as conn:
            read = read_lookup(
                list(specs.values()), h.resources["upstream"].upstream(), conn, Queries(sql_dir(), "pipeline"), tmp_path
            )
        assert read.waiting == ["mitre_attack_mobile", "mitre_attack_ics"]
        assert list(read.versions) == ["mitre_attack"] and set(read.by_domain) == {"enterprise"}
        assert read.techniques and {t.domain for t in read.techniques} == {"enterprise"}
    finally:
        drop(pg_server_url, name)
