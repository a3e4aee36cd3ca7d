"""`lookups/mitre_techniques`: the ATT&CK technique table of every domain, rebuilt whenever ATT&CK is published."""

from collections.abc import Iterator, Sequence

import dagster as dg

from secrag.db.queries import Queries

from ..automation import on_new_inputs
from ..lookup_read import read_lookup
from ..resources import StoreResource, UpstreamResource
from ..sources.registry import SourceSpec
from .keys import LOOKUP_KEY, NON_EMPTY, OWNERS, source_key


def build_lookup_asset(specs: Sequence[SourceSpec]) -> dg.AssetsDefinition:
    """The technique lookup, read from exactly the ATT&CK versions that the domains' sources (sources/mitre_attack,
    sources/mitre_attack_mobile, sources/mitre_attack_ics: those enabled) published."""
    names = ", ".join(f"sources/{s.name}" for s in specs)

    @dg.asset(
        key=LOOKUP_KEY,
        deps=[source_key(s.name) for s in specs],
        group_name="lookups",
        kinds={"postgres"},
        owners=OWNERS,
        automation_condition=on_new_inputs(),
        check_specs=[
            dg.AssetCheckSpec(
                NON_EMPTY,
                asset=LOOKUP_KEY,
                blocking=True,
                description="The bundles yielded techniques (else the table is kept).",
            )
        ],
        description="ATT&CK technique id -> name, tactics, platforms, parent, redirects and domain (Enterprise, "
        "Mobile, ICS), used to enrich chunks of every source and to resolve technique ids. Rebuilt automatically "
        f"(eager) after {names} publish.",
    )
    def mitre_techniques(
        context: dg.AssetExecutionContext, upstream: UpstreamResource, store: StoreResource
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        q = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            read = read_lookup(specs, upstream.upstream(), conn, q, store.work_path())
            for name in read.waiting:
                context.log.warning(f"sources/{name} has no published version yet; its domain waits")
            versions, techniques = read.versions, read.techniques
            if not versions:
                raise dg.Failure(f"none of {names} has a published version yet; materialize them first")
            if not techniques:
                yield dg.AssetCheckResult(check_name=NON_EMPTY, passed=False, metadata=dict(versions))
                raise dg.Failure(f"ATT&CK {versions} holds no techniques; the lookup table is kept")
            written = store.store().replace_techniques(conn, techniques, read.by_domain)
        active = sum(1 for t in techniques if t.active)
        version = ",".join(sorted(set(versions.values())))  # one release normally: the sources share ATT&CK's
        context.log.info(f"MITRE lookup: {written} techniques ({active} active) from ATT&CK {versions}")
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(version),
            check_results=[dg.AssetCheckResult(check_name=NON_EMPTY, passed=True, metadata={"techniques": written})],
            metadata={
                "version": version,
                "techniques": written,
                "active": active,
                "sub_techniques": sum(1 for t in techniques if t.parent),
                **{f"active_{d}": sum(t.active and t.domain == d for t in techniques) for d in sorted(read.by_domain)},
            },
        )

    return mitre_techniques
