"""ATT&CK's domains (Enterprise, Mobile, ICS): their names, the sources holding each, and the STIX spelling."""

from __future__ import annotations

from collections.abc import Iterable

DOMAINS = ("enterprise", "mobile", "ics")
DEFAULT_DOMAIN = "enterprise"  # what ATT&CK meant before it had other matrices, and what map and coverage read
# The sources of each domain's technique documents and of its procedure examples.
TECHNIQUE_SOURCES = {"enterprise": "mitre_attack", "mobile": "mitre_attack_mobile", "ics": "mitre_attack_ics"}
PROCEDURE_SOURCES = {
    "enterprise": "mitre_attack_procedures",
    "mobile": "mitre_attack_mobile_procedures",
    "ics": "mitre_attack_ics_procedures",
}
# Every source whose documents say their domain (metadata.domain): the above and the detection strategies and
# analytics of all three (one source).
ATTACK_SOURCES = (*TECHNIQUE_SOURCES.values(), *PROCEDURE_SOURCES.values(), "mitre_attack_detections")


def domain_name(stix_domain: object) -> str | None:
    """A domain as x_mitre_domains spells it (mobile-attack) onto its name here (mobile); None when unknown."""
    name = str(stix_domain).strip().lower().removesuffix("-attack")
    return name if name in DOMAINS else None


def domain_names(stix_domains: Iterable[object]) -> tuple[str, ...]:
    """The known domains of an x_mitre_domains list, in its order, each once."""
    return tuple(dict.fromkeys(d for d in map(domain_name, stix_domains) if d))
