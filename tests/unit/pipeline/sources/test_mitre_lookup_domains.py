"""The technique table of ATT&CK's three domains, counted against the real bundles read as plain JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.sources.mitre_lookup import bundle_domain, domain_of, domain_platforms, techniques_from_bundle
from secrag.attack_domains import DOMAINS, domain_name, domain_names
from tests.plugins.upstream import SNAPSHOT


def _bundle(domain: str) -> Path:
    return SNAPSHOT / "mitre_attack" / f"{domain}-attack" / f"{domain}-attack.json"


def _patterns(domain: str) -> list[dict[str, Any]]:
    """The bundle's attack-patterns with an ATT&CK id, read without the parser's code (14 Mobile techniques
    revoked and 12 ICS ones deprecated long ago have theirs under their matrix's old name)."""
    objects = json.loads(_bundle(domain).read_text(encoding="utf-8"))["objects"]
    names = {"mitre-attack", "mitre-mobile-attack", "mitre-ics-attack"}
    return [
        o
        for o in objects
        if o["type"] == "attack-pattern"
        and any(r.get("source_name") in names and r.get("external_id") for r in o.get("external_references", ()))
    ]


@pytest.mark.parametrize(
    ("domain", "total", "active"),
    [("enterprise", 835, 691), ("mobile", 190, 124), ("ics", 95, 83)],
)
def test_each_bundle_holds_its_domain_s_techniques(domain: str, total: int, active: int) -> None:
    patterns = _patterns(domain)
    live = [o for o in patterns if not o.get("revoked") and not o.get("x_mitre_deprecated")]
    assert (len(patterns), len(live)) == (total, active)  # the bundle itself, as issue 45 counts it
    table = techniques_from_bundle(_bundle(domain))
    assert (len(table), sum(t.active for t in table)) == (total, active)
    assert {t.domain for t in table} == {domain}


def test_technique_ids_are_unique_across_the_domains() -> None:
    ids = [t.id for domain in DOMAINS for t in techniques_from_bundle(_bundle(domain))]
    assert len(ids) == len(set(ids)) == 835 + 190 + 95


def test_mobile_and_ics_techniques() -> None:
    mobile = {t.id: t for t in techniques_from_bundle(_bundle("mobile"))}
    assert mobile["T1624.001"].full_name == "Event Triggered Execution: Broadcast Receivers"
    assert mobile["T1624.001"].parent == "T1624" and set(mobile["T1624.001"].platforms) <= {"android", "ios"}
    ics = {t.id: t for t in techniques_from_bundle(_bundle("ics"))}
    # ICS names assets (Field Controller/RTU/PLC/IED, Control Server, None) where others name platforms: `ics`.
    assert ics["T0800"].name == "Activate Firmware Update Mode" and ics["T0800"].platforms == ("ics",)
    assert all("ics" in t.platforms for t in ics.values())
    assert ics["T0800"].tactics == ("inhibit-response-function",)
    # A Mobile technique revoked in 2019, its id only under the old matrix's name, redirects to its successor.
    assert mobile["T1425"].revoked and mobile["T1425"].replaced_by == "T1474"
    assert ics["T0850"].deprecated and ics["T0850"].name == "Role Identification" and not ics["T0850"].active


def test_domain_names() -> None:
    assert domain_name("mobile-attack") == "mobile" and domain_name("ICS-ATTACK") == "ics"
    assert domain_name("pre-attack") is None
    assert domain_names(["ics-attack", "enterprise-attack", "ics-attack", "pre-attack"]) == ("ics", "enterprise")


def test_an_object_is_in_its_bundle_s_domain_when_it_names_it() -> None:
    shared = {"x_mitre_domains": ["enterprise-attack", "mobile-attack"]}
    assert domain_of(shared, "mobile") == "mobile" and domain_of(shared, "enterprise") == "enterprise"
    assert domain_of({"x_mitre_domains": ["ics-attack"]}, "enterprise") == "ics"
    assert domain_of({}, "ics") == "ics"  # relationships name none
    assert domain_of({"x_mitre_domains": "mobile-attack"}, "enterprise") == "mobile"  # a string, not a list


def test_a_bundle_s_domain_is_what_its_single_domain_objects_name_most() -> None:
    objects = [
        {"x_mitre_domains": ["ics-attack"]},
        {"x_mitre_domains": ["ics-attack"]},
        {"x_mitre_domains": ["enterprise-attack"]},
        {"x_mitre_domains": ["enterprise-attack", "ics-attack"]},
        {"x_mitre_domains": ["enterprise-attack", "ics-attack"]},
    ]
    assert bundle_domain(objects) == "ics"
    assert bundle_domain([{"type": "relationship"}]) == "enterprise"  # nothing says: ATT&CK's first matrix


def test_domain_platforms() -> None:
    assert domain_platforms(["Windows", "Control Server", "None"], "ics") == ("ics", "windows")
    assert domain_platforms(["Android"], "mobile") == ("android",)
    assert domain_platforms(["Control Server"], "enterprise") == ()
