"""A small, real store for the serving tests: subsets of real upstream data, embedded with the real model."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psycopg

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import SourceSpec, default_registry
from pipeline.store import Access, SourceRow, Store
from secrag.models.embedder import TextModel
from tests.plugins.upstream import SNAPSHOT

log = logging.getLogger(__name__)

UPSTREAM = SNAPSHOT
# Technique families kept from ATT&CK (with their sub-techniques); everything else is left out.
# The store stays at ~550 chunks so the real model embeds it in well under a minute on two busy cores.
ATTACK_FAMILIES = ("T1003", "T1059", "T1218", "T1055", "T1087")
ATTACK_GROUPS = ("G0007", "S0002")


@dataclasses.dataclass(frozen=True)
class Subset:
    """Which files of a source to parse (narrower globs) and which of its records to keep."""

    source: str
    paths: tuple[str, ...] = ()
    keep: Callable[[Record], bool] = lambda r: True
    limit: int = 60
    must: tuple[str, ...] = ()  # upstream ids always kept


def _attack(r: Record) -> bool:
    return r.upstream_id.split(".")[0] in ATTACK_FAMILIES or r.upstream_id in ATTACK_GROUPS


SUBSETS = (
    Subset("mitre_attack", keep=_attack, limit=70, must=("T1003", "T1003.001", "T1059", "T1059.001")),
    Subset(
        "sigma",
        limit=80,
        paths=(
            "rules/windows/**/*mimikatz*.yml",
            "rules/windows/**/*lsass*.yml",
            "rules/windows/process_creation/proc_creation_win_powershell_[a-e]*.yml",
            "rules/linux/process_creation/proc_creation_lnx_[a-b]*.yml",
        ),
    ),
    Subset(
        "atomic",
        paths=("atomics/T1003.001/T1003*.yaml", "atomics/T1059.001/T1059*.yaml", "atomics/T1218.011/T1218*.yaml"),
    ),
    Subset("cisa_kev", limit=50, must=("CVE-2021-44228", "CVE-2017-0144")),
    Subset("lolbas", limit=50),
    Subset("capec", limit=12, must=("CAPEC-66",)),
    Subset("mitre_atlas", limit=15, must=("AML.T0051", "AML.T0051.000")),
    Subset("mitre_d3fend", limit=15, must=("D3-AL",)),
    Subset(
        "ossem_dd",
        paths=(
            "windows/sysmon/events/event-1.yml",
            "windows/sysmon/events/event-3.yml",
            "windows/microsoftdefenderforendpoint/events/DeviceProcessEvents_v1.yml",
            "windows/etw-providers/Microsoft-Windows-Security-Auditing/events/event-4688.yml",
            "linux/osquery/events/processes.yml",
        ),
    ),
    Subset("ecs", keep=lambda r: r.upstream_id in {"process", "dns"}),
)

# Private user-folder documents of two tenants, for the access-control tests.
PRIVATE = {
    "acme_notes": (Access(tenant="acme", users=("alice",)), "acme"),
    "acme_shared": (Access(tenant="acme"), "acme"),
    "acme_red": (Access(tenant="acme", groups=("red",)), "acme"),
    "globex_notes": (Access(tenant="globex", users=("gina",)), "globex"),
}


def private_records(source: str, tenant: str) -> list[Record]:
    """Notes that share words with public data, so every search path can reach them."""
    return [
        Record(
            source=source,
            upstream_id=f"note-{i}",
            title=f"{tenant} secret note {i} about mimikatz",
            body=f"Internal {tenant} playbook {i}: LSASS credential dumping with mimikatz.exe "
            f"(T1003.001) seen on host {tenant}-dc{i}. Codeword zanzibar{tenant}.",
            techniques=("T1003.001",),
            platforms=("windows",),
            tags=(f"{tenant}-only", "internal"),
        )
        for i in range(3)
    ]


def _select(records: Sequence[Record], subset: Subset) -> list[Record]:
    must = [r for r in records if r.upstream_id in subset.must]
    rest = [r for r in records if subset.keep(r) and r.upstream_id not in subset.must]
    return [*must, *rest][: max(subset.limit, len(must))]


def _spec(spec: SourceSpec, subset: Subset) -> SourceSpec:
    return dataclasses.replace(spec, paths=subset.paths) if subset.paths else spec


def build(conn: psycopg.Connection, sql_dir: Path, embedder: TextModel) -> dict[str, int]:
    """Parse, publish and embed the subsets into the (migrated, empty) database of conn."""
    from pipeline.sources.mitre_lookup import techniques_from_bundle

    started = time.monotonic()
    store = Store(sql_dir)
    registry = default_registry()
    bundle = UPSTREAM / "mitre_attack" / registry["mitre_attack"].paths[0]
    store.replace_techniques(conn, techniques_from_bundle(bundle), "test")
    lookup = store.technique_names(conn)
    counts: dict[str, int] = {}
    for subset in SUBSETS:
        spec = registry[subset.source]
        outcome = parse_source(_spec(spec, subset), UPSTREAM / subset.source, version="test")
        records = _select(outcome.records, subset)
        store.register_source(
            conn,
            SourceRow(
                name=spec.name,
                kind="online",
                description=spec.description,
                category=spec.category,
                upstream=spec.repo or spec.feed_url,
                branch=spec.branch,
                tracking=spec.tracking,
            ),
        )
        store.publish(conn, source=spec.name, version="test-v1", records=records, lookup=lookup, chunking=ChunkConfig())
        counts[spec.name] = len(records)
    for source, (access, tenant) in PRIVATE.items():
        store.register_source(conn, SourceRow(name=source, kind="user_folder", description=f"{tenant} notes"))
        store.publish(
            conn,
            source=source,
            version="v1",
            records=private_records(source, tenant),
            lookup=lookup,
            chunking=ChunkConfig(),
            access=access,
        )
        counts[source] = 3
    stats = embed_pending(conn, embedder, sql_dir, batch_size=128)
    conn.execute("ANALYZE")
    log.info("serving corpus built in %.1fs (%s chunks embedded)", time.monotonic() - started, stats.embedded)
    return counts
