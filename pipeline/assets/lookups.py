"""`lookups/mitre_techniques`: the ATT&CK technique table, rebuilt whenever ATT&CK is published."""

import tempfile
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from secrag.db.queries import Queries

from ..automation import on_new_inputs
from ..refresh_inputs import pinned_version
from ..resources import StoreResource, UpstreamResource
from ..sources.mitre_lookup import techniques_from_bundle
from ..sources.registry import SourceSpec
from .keys import ATTACK_SOURCE, LOOKUP_KEY, NON_EMPTY, OWNERS, source_key


def build_lookup_asset(spec: SourceSpec) -> dg.AssetsDefinition:
    """The technique lookup, read from exactly the ATT&CK version that sources/mitre_attack published."""

    @dg.asset(
        key=LOOKUP_KEY,
        deps=[source_key(ATTACK_SOURCE)],
        group_name="lookups",
        kinds={"postgres"},
        owners=OWNERS,
        automation_condition=on_new_inputs(),
        check_specs=[
            dg.AssetCheckSpec(
                NON_EMPTY,
                asset=LOOKUP_KEY,
                blocking=True,
                description="The bundle yielded techniques (else the table is kept).",
            )
        ],
        description="ATT&CK technique id -> name, tactics, platforms, parent and redirects, used to enrich "
        "chunks of every source and to resolve technique ids. Rebuilt automatically (eager) "
        "after sources/mitre_attack publishes.",
    )
    def mitre_techniques(
        context: dg.AssetExecutionContext, upstream: UpstreamResource, store: StoreResource
    ) -> Iterator[dg.AssetCheckResult | dg.MaterializeResult]:
        q = Queries(store.sql_path(), "pipeline")
        with store.connect() as conn:
            row = conn.execute(q.source_state, {"source": ATTACK_SOURCE}).fetchone()
            version = row[0] if row else None
            if not version:
                raise dg.Failure("sources/mitre_attack has no published version yet; materialize it first")
            with tempfile.TemporaryDirectory(prefix="mitre-lookup-", dir=store.work_path()) as tmp:
                fetched = upstream.upstream().fetch(
                    spec, pinned_version(spec, version), Path(tmp) / "checkout", pin=version
                )
                techniques = techniques_from_bundle(fetched.root / spec.paths[0])
            if not techniques:
                yield dg.AssetCheckResult(check_name=NON_EMPTY, passed=False, metadata={"version": version})
                raise dg.Failure(f"ATT&CK {version} holds no techniques; the lookup table is kept")
            written = store.store().replace_techniques(conn, techniques, version)
        active = sum(1 for t in techniques if t.active)
        context.log.info(f"MITRE lookup: {written} techniques ({active} active) from ATT&CK {version}")
        yield dg.MaterializeResult(
            data_version=dg.DataVersion(version),
            check_results=[dg.AssetCheckResult(check_name=NON_EMPTY, passed=True, metadata={"techniques": written})],
            metadata={
                "version": version,
                "techniques": written,
                "active": active,
                "sub_techniques": sum(1 for t in techniques if t.parent),
            },
        )

    return mitre_techniques
