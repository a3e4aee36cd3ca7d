"""A layer's technique set checked against the store's ATT&CK: ids it does not have, revoked or deprecated
techniques, and entries under a tactic its domain does not have, are left out and reported (never an error); the
deployment's entry limit is a 422."""

from __future__ import annotations

from dataclasses import dataclass

from serving.access.request_limits import RequestLimits
from serving.contract.layer_models import LayerIn, LayerReport
from serving.contract.requests import AttackDomain
from serving.layers.technique_set import Number, TechniqueSet, read_layer
from serving.search.catalog import Catalog


@dataclass(frozen=True)
class Screened:
    """The techniques kept of a layer, and what was read of it."""

    techniques: TechniqueSet
    report: LayerReport


@dataclass(frozen=True)
class LayerReads:
    """Layers read against the store (the catalog's pool and queries) within the deployment's limits."""

    catalog: Catalog
    limits: RequestLimits

    def technique_set(self, layer: LayerIn, field: str, min_score: Number | None = None) -> Screened:
        """The layer's technique set of active ATT&CK techniques under its domain's tactics; `field` names the
        layer in a 422."""
        self.limits.check_layer(field, layer)
        named = any(entry.tactic is not None for entry in layer.techniques)
        read = read_layer(layer, min_score, self.tactics(DOMAINS[layer.domain]) if named else None)
        states = self.states(read.ids())
        unknown = [t for t in read.ids() if t not in states]
        revoked = [t for t in read.ids() if states.get(t) == "revoked"]
        deprecated = [t for t in read.ids() if states.get(t) == "deprecated"]
        kept = read.without(frozenset(unknown + revoked + deprecated))
        return Screened(kept, report(kept, unknown=unknown, revoked=revoked, deprecated=deprecated))

    def tactics(self, domain: AttackDomain) -> frozenset[str]:
        """The tactics (short names) of the domain's active techniques in the store's ATT&CK."""
        with self.catalog.pool.connection() as conn:
            rows = conn.execute(self.catalog.queries.layer_domain_tactics, {"domain": domain}).fetchall()
        return frozenset(r[0] for r in rows)

    def states(self, ids: list[str]) -> dict[str, str]:
        """Each id the store's ATT&CK has: active, revoked or deprecated (revoked when both)."""
        if not ids:
            return {}
        with self.catalog.pool.connection() as conn:
            rows = conn.execute(self.catalog.queries.layer_technique_states, {"ids": ids}).fetchall()
        return {r[0]: "revoked" if r[1] else "deprecated" if r[2] else "active" for r in rows}


def report(read: TechniqueSet, *, unknown: list[str], revoked: list[str], deprecated: list[str]) -> LayerReport:
    return LayerReport(
        name=read.name,
        domain=read.domain,
        format=read.format,
        entries=read.entries,
        techniques=len(read.techniques),
        unknown=unknown,
        revoked=revoked,
        deprecated=deprecated,
        disabled=list(read.disabled),
        below_min_score=list(read.below_min_score),
        unknown_tactics=list(read.unknown_tactics),
    )


def asked_domain(layer: LayerIn, given: AttackDomain | None) -> AttackDomain:
    """The ATT&CK domain a request with this layer is read in: the one it names, else the layer's."""
    return given if given is not None else DOMAINS[layer.domain]


DOMAINS: dict[str, AttackDomain] = {"enterprise-attack": "enterprise", "mobile-attack": "mobile", "ics-attack": "ics"}
