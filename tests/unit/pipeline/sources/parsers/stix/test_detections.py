"""ATT&CK detection strategies and analytics: the real Enterprise, Mobile and ICS bundles, plus inline edge cases."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from pipeline.sources.parsers import stix
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry

from .bundles import UPSTREAM, bundle_file

SOURCE = "mitre_attack_detections"
DOMAINS = ("enterprise", "mobile", "ics")
KINDS = {"x-mitre-detection-strategy": "detection-strategy", "x-mitre-analytic": "analytic"}


def _bundle(domain: str) -> list[dict[str, Any]]:
    path = UPSTREAM / "mitre_attack" / f"{domain}-attack" / f"{domain}-attack.json"
    objects: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["objects"]
    return objects


def _active(obj: dict[str, Any]) -> bool:
    return not obj.get("revoked") and not obj.get("x_mitre_deprecated")


@pytest.fixture(scope="module")
def detections() -> dict[str, Record]:
    # The source has no snapshot folder of its own: it reads ATT&CK's three bundles.
    outcome = parse_source(default_registry()[SOURCE], UPSTREAM / "mitre_attack")
    assert outcome.files_seen == 3
    assert outcome.skipped == ()
    assert len(outcome.records) == 2930
    assert outcome.with_techniques == 2930  # every strategy detects one active technique
    return {r.upstream_id: r for r in outcome.records}


def test_counts_per_domain_and_kind(detections: dict[str, Record]) -> None:
    got = Counter((r.metadata["domain"], r.metadata["kind"]) for r in detections.values())
    assert got == {
        ("enterprise", "detection-strategy"): 691,
        ("enterprise", "analytic"): 1739,
        ("mobile", "detection-strategy"): 124,
        ("mobile", "analytic"): 211,
        ("ics", "detection-strategy"): 83,
        ("ics", "analytic"): 82,
    }
    # The same counts straight from the bundles: every active strategy and analytic (v18 retires none).
    upstream = Counter(
        (domain, KINDS[o["type"]]) for domain in DOMAINS for o in _bundle(domain) if o["type"] in KINDS and _active(o)
    )
    assert got == upstream


def test_a_strategy(detections: dict[str, Record]) -> None:
    r = detections["DET0103"]
    assert r.doc_id == f"{SOURCE}:DET0103"
    assert r.title == "Behavioral Detection of Network Share Connection Removal via CLI and SMB Disconnects"
    assert r.url == "https://attack.mitre.org/detectionstrategies/DET0103"
    assert (r.techniques, r.platforms, r.tags) == (("T1070.005",), ("windows",), ("detection-strategy",))
    assert r.body.startswith(
        "Detects: T1070.005 Indicator Removal: Network Share Connection Removal\n\nAnalytic AN0286:"
    )
    assert "- WinEventLog:Security EventCode=4624, 4648 (DC0067 Logon Session Creation)" in r.body
    assert "- TimeWindow: Adjustable window" in r.body
    m = r.metadata
    assert (m["kind"], m["domain"], m["version"]) == ("detection-strategy", "enterprise", "1.0")
    assert m["stix_id"] == "x-mitre-detection-strategy--00060b87-7f99-45aa-9553-a4d94139195c"
    assert [a["id"] for a in m["analytics"]] == ["AN0286"]
    assert m["analytics"][0]["platforms"] == ["Windows"]
    assert m["analytics"][0]["log_sources"][3] == {
        "name": "NSM:Flow",
        "channel": "SMB2_LOGOFF/SMB_TREE_DISCONNECT",
        "data_component_id": "DC0085",
        "data_component": "Network Traffic Content",
    }
    assert json.loads(r.raw)["id"] == m["stix_id"]  # its upstream form is the strategy's STIX object


def test_an_analytic(detections: dict[str, Record]) -> None:
    r = detections["AN0286"]
    strategy = "Behavioral Detection of Network Share Connection Removal via CLI and SMB Disconnects"
    assert r.title == f"{strategy}: Windows (AN0286)"
    assert r.url == "https://attack.mitre.org/detectionstrategies/DET0103#AN0286"
    assert (r.techniques, r.platforms, r.tags) == (("T1070.005",), ("windows",), ("analytic",))
    assert r.body.startswith(f"Strategy: DET0103 {strategy}\n\nDetects: T1070.005 ")
    assert "Platform: Windows" in r.body and "Mutable elements:\n- TimeWindow: Adjustable" in r.body
    m = r.metadata
    assert (m["kind"], m["domain"], m["strategy"], m["strategy_name"]) == (
        "analytic",
        "enterprise",
        "DET0103",
        strategy,
    )
    assert m["platforms"] == ["Windows"]
    assert [(s["name"], s["data_component_id"]) for s in m["log_sources"]] == [
        ("WinEventLog:Security", "DC0067"),
        ("WinEventLog:Sysmon", "DC0032"),
        ("WinEventLog:PowerShell", "DC0064"),
        ("NSM:Flow", "DC0085"),
    ]
    assert [e["field"] for e in m["mutable_elements"]] == [
        "TimeWindow",
        "UserContext",
        "ProcessCommandLineRegex",
        "NetworkShareNamePattern",
    ]


def test_every_analytic_s_log_sources_and_strategy(detections: dict[str, Record]) -> None:
    """Log sources per analytic, and analytics per strategy, as the bundles list them."""
    for domain in DOMAINS:
        objects = _bundle(domain)
        by_id = {o["id"]: o for o in objects}
        for o in objects:
            if o["type"] == "x-mitre-analytic":
                r = detections[o["external_references"][0]["external_id"]]
                # stripped: upstream writes some names with a trailing space ("networkconfig ")
                names = [
                    (s["name"].strip(), s["channel"].strip()) for s in o.get("x_mitre_log_source_references") or ()
                ]
                assert [(s["name"], s.get("channel", "")) for s in r.metadata.get("log_sources", [])] == names
            elif o["type"] == "x-mitre-detection-strategy":
                refs = [by_id[a]["external_references"][0]["external_id"] for a in o.get("x_mitre_analytic_refs") or ()]
                got = detections[o["external_references"][0]["external_id"]].metadata.get("analytics", [])
                assert [a["id"] for a in got] == refs


def test_mobile_and_ics(detections: dict[str, Record]) -> None:
    mobile = detections["AN1740"]
    assert mobile.metadata["domain"] == "mobile" and mobile.metadata["platforms"] in (["Android"], ["iOS"])
    ics = [r for r in detections.values() if r.metadata["domain"] == "ics" and r.metadata["kind"] == "analytic"]
    # ICS analytics name the platform "None": kept as upstream writes it, left out of the title and body.
    assert all(r.metadata["platforms"] == ["None"] for r in ics)
    assert all(r.title.endswith(f"({r.upstream_id})") and ": None" not in r.title for r in ics)
    assert not any("Platform: None" in r.body for r in ics)
    # Everything of the ICS domain is on the shared platform `ics` (mitre_lookup.domain_platforms).
    assert {r.platforms for r in detections.values() if r.metadata["domain"] == "ics"} == {("ics",)}
    assert mobile.platforms in (("android",), ("ios",))
    # A strategy with no analytic is still one (ICS DET0748 lists none).
    lone = detections["DET0748"]
    assert lone.metadata["domain"] == "ics" and "analytics" not in lone.metadata and lone.techniques


def test_citation_markers_removed(detections: dict[str, Record]) -> None:
    cited = {r.upstream_id for r in detections.values() if "(Citation:" in json.loads(r.raw).get("description", "")}
    assert {"AN1976", "AN1740", "AN1855"} <= cited and len(cited) == 27 + 21 + 12
    assert not any("(Citation:" in r.body for r in detections.values())
    r = detections["AN1855"]
    assert "SetWindowsHookEx and SetWinEventHook functions. Also consider" in r.body
    # Markdown links read as their text: a linked technique's URL is no label of the analytic.
    assert "Web Protocols" in detections["AN1976"].body and "attack.mitre.org" not in detections["AN1976"].body


def test_technique_documents_link_their_strategies_and_analytics() -> None:
    attack = {
        r.upstream_id: r for r in parse_source(default_registry()["mitre_attack"], UPSTREAM / "mitre_attack").records
    }
    r = attack["T1070.005"]
    name = "Behavioral Detection of Network Share Connection Removal via CLI and SMB Disconnects"
    assert r.metadata["detection_strategies"] == [{"id": "DET0103", "name": name}]
    assert r.metadata["analytics"] == ["AN0286"]
    assert f"Detection strategies:\n- DET0103 {name}" in r.body
    linked = [a for t in attack.values() for a in t.metadata.get("analytics", ())]
    assert len(linked) == len(set(linked)) == 1739  # each Enterprise analytic, under its one technique
    assert sum(1 for t in attack.values() if t.metadata.get("detection_strategies")) == 691


def _obj(kind: str, stix_id: str, ext: str, **extra: Any) -> dict[str, Any]:
    url = f"https://attack.mitre.org/x/{ext}"
    return {
        "type": kind,
        "id": stix_id,
        "external_references": [{"source_name": "mitre-attack", "external_id": ext, "url": url}],
        **extra,
    }


def _edge_bundle() -> list[dict[str, Any]]:
    """Retired strategies and analytics, an analytic no strategy lists, a log source whose component is absent."""
    analytic = "x-mitre-analytic"
    return [
        _obj("attack-pattern", "attack-pattern--t", "T9000", name="Target", x_mitre_domains=["enterprise-attack"]),
        _obj("x-mitre-data-component", "x-mitre-data-component--d", "DC9000", name="Process Creation"),
        _obj(
            "x-mitre-detection-strategy",
            "x-mitre-detection-strategy--ok",
            "DET9000",
            name="Live",
            x_mitre_domains=["enterprise-attack"],
            x_mitre_analytic_refs=["x-mitre-analytic--ok", "x-mitre-analytic--deprecated", "x-mitre-analytic--gone"],
        ),
        _obj(
            "x-mitre-detection-strategy",
            "x-mitre-detection-strategy--revoked",
            "DET9001",
            name="Revoked",
            revoked=True,
            x_mitre_analytic_refs=["x-mitre-analytic--of-revoked"],
        ),
        _obj(
            analytic,
            "x-mitre-analytic--ok",
            "AN9000",
            name="Analytic 9000",
            description="Watch it (Citation: Somebody 2020).",
            x_mitre_domains=["enterprise-attack"],
            x_mitre_platforms=["Linux"],
            x_mitre_log_source_references=[
                {
                    "x_mitre_data_component_ref": "x-mitre-data-component--d",
                    "name": "auditd:SYSCALL",
                    "channel": "execve",
                },
                {"x_mitre_data_component_ref": "x-mitre-data-component--absent", "name": "linux:syslog", "channel": ""},
            ],
            x_mitre_mutable_elements=[{"field": "Window", "description": "How long (Citation: X)"}],
        ),
        _obj(analytic, "x-mitre-analytic--deprecated", "AN9001", x_mitre_deprecated=True, x_mitre_platforms=["Linux"]),
        _obj(analytic, "x-mitre-analytic--of-revoked", "AN9002", x_mitre_platforms=["Linux"]),
        _obj(analytic, "x-mitre-analytic--orphan", "AN9003", x_mitre_platforms=["Linux"]),
        {
            "type": "relationship",
            "id": "relationship--1",
            "relationship_type": "detects",
            "source_ref": "x-mitre-detection-strategy--ok",
            "target_ref": "attack-pattern--t",
        },
    ]


def test_retired_and_unreachable_objects_are_left_out() -> None:
    records = {r.upstream_id: r for r in stix.parse(bundle_file(SOURCE, _edge_bundle()))}
    # The revoked strategy, the deprecated analytic, the revoked strategy's analytic and the analytic no
    # strategy lists are not records; a listed id absent from the bundle is skipped.
    assert sorted(records) == ["AN9000", "DET9000"]
    strategy, analytic = records["DET9000"], records["AN9000"]
    assert [a["id"] for a in strategy.metadata["analytics"]] == ["AN9000"]
    assert strategy.techniques == analytic.techniques == ("T9000",)
    assert analytic.title == "Live: Linux (AN9000)"
    assert analytic.metadata["log_sources"] == [
        {
            "name": "auditd:SYSCALL",
            "channel": "execve",
            "data_component_id": "DC9000",
            "data_component": "Process Creation",
        },
        {"name": "linux:syslog"},  # its data component is not in the bundle
    ]
    assert analytic.metadata["mutable_elements"] == [{"field": "Window", "description": "How long"}]
    assert "Watch it." in analytic.body and "(Citation:" not in analytic.body + strategy.body


def test_technique_links_skip_retired_analytics() -> None:
    objects = _edge_bundle()
    objects[0] = {**objects[0], "x_mitre_platforms": ["Linux"]}
    records = {r.upstream_id: r for r in stix.parse(bundle_file("mitre_attack", objects))}
    assert records["T9000"].metadata["detection_strategies"] == [{"id": "DET9000", "name": "Live"}]
    assert records["T9000"].metadata["analytics"] == ["AN9000"]
