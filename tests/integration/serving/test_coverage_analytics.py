"""POST /v1/coverage's analytics over the serving corpus: ATT&CK's analytics (real records of the three bundles,
parsed by the attack_detections scheme) per technique and platform, each log source with the Sigma logsources and
schemas it corresponds to and what the store holds of them (counted here straight from the store), the two
analytics gaps, the platform filter, a private analytic, and the MCP tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry
from secrag.db import database
from tests.plugins.upstream import SNAPSHOT

from .test_coverage import by_id, covered
from .test_mcp import call

SOURCE = "mitre_attack_detections"
# Analytics of corpus techniques (Windows, Linux, macOS), and a mobile one whose only log source (Application
# Vetting) the table does not know.
TECHNIQUES = ("T1003.001", "T1218.011", "T1059.001", "T1087.002", "T1521.003")
PRIVATE = "AN9999"  # a copy of a public analytic in globex's reach only


def analytic_records() -> list[Record]:
    spec = default_registry()[SOURCE]
    outcome = parse_source(spec, SNAPSHOT / "mitre_attack", version="test")
    return [r for r in outcome.records if r.metadata.get("kind") == "analytic" and set(r.techniques) & set(TECHNIQUES)]


@pytest.fixture(scope="module")
def analytics(serving_db_url: str) -> Iterator[dict[str, Record]]:
    """The analytics inserted as published documents (public), and PRIVATE for tenant globex."""
    records = analytic_records()
    private = next(r for r in records if r.upstream_id == "AN1308")
    with database.connect(serving_db_url, autocommit=True) as owner:
        owner.execute(
            "INSERT INTO sources (name, kind, description, category) VALUES "
            "(%(s)s, 'online', 'detection strategies and analytics', 'technique') ON CONFLICT DO NOTHING",
            {"s": SOURCE},
        )
        for record, doc, tenant in [
            *((r, f"{SOURCE}:{r.upstream_id}", None) for r in records),
            (private, f"{SOURCE}:{PRIVATE}", "globex"),
        ]:
            owner.execute(
                "INSERT INTO documents (doc_id, source, source_version, title, url, body, metadata, techniques,"
                " platforms, tags, content_hash, tenant, media_type) VALUES (%(doc)s, %(s)s, 'test', %(title)s,"
                " NULL, %(body)s, %(metadata)s, %(techniques)s, %(platforms)s, '{}', %(doc)s, %(tenant)s,"
                " 'text/plain')",
                {
                    "doc": doc,
                    "s": SOURCE,
                    "title": record.title,
                    "body": record.body,
                    "metadata": json.dumps(record.metadata),
                    "techniques": list(record.techniques),
                    "platforms": list(record.platforms),
                    "tenant": tenant,
                },
            )
        yield {r.upstream_id: r for r in records}
        owner.execute("DELETE FROM documents WHERE source = %(s)s AND source_version = 'test'", {"s": SOURCE})


def sigma_rules(url: str, logsource: dict[str, str]) -> dict[str, int]:
    """Public rules per source whose logsource has every key of `logsource` (any case), read from the store."""
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT source, count(*) FROM documents WHERE tenant IS NULL AND metadata ? 'logsource'"
            " AND (%(p)s::text IS NULL OR lower(metadata->'logsource'->>'product') = %(p)s)"
            " AND (%(c)s::text IS NULL OR lower(metadata->'logsource'->>'category') = %(c)s)"
            " AND (%(s)s::text IS NULL OR lower(metadata->'logsource'->>'service') = %(s)s) GROUP BY source",
            {"p": logsource.get("product"), "c": logsource.get("category"), "s": logsource.get("service")},
        ).fetchall()
    return dict(rows)


def held_doc_ids(url: str) -> set[str]:
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT doc_id FROM documents WHERE source IN ('ossem_dd', 'ecs')").fetchall()
    return {r[0] for r in rows}


def platforms_of(technique: dict[str, Any]) -> dict[str, list[str]]:
    return {p["platform"]: [a["analytic_id"] for a in p["analytics"]] for p in technique["analytics"]}


def expected_platforms(records: dict[str, Record], technique: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for r in records.values():
        if technique in r.techniques:
            for platform in r.metadata["platforms"]:
                found.setdefault(platform, []).append(r.upstream_id)
    return {p: sorted(ids) for p, ids in sorted(found.items(), key=lambda kv: kv[0].casefold())}


def test_each_technique_lists_its_analytics_per_platform(
    client: TestClient, analytics: dict[str, Record], serving_db_url: str
) -> None:
    answer = covered(client, techniques=list(TECHNIQUES), layer=False, analytics=True)
    found = by_id(answer)
    for technique in TECHNIQUES:
        assert platforms_of(found[technique]) == expected_platforms(analytics, technique), technique
    windows = found["T1003.001"]["analytics"][0]["analytics"][0]
    record = analytics[windows["analytic_id"]]
    assert windows["strategy"] == record.metadata["strategy"]
    assert windows["doc_id"] == f"{SOURCE}:{record.upstream_id}"
    assert [(s["name"], s["channel"]) for s in windows["log_sources"]] == [
        (s["name"], s.get("channel")) for s in record.metadata["log_sources"]
    ]
    # each log source once, with how many of the answer's analytics need it, most needed first
    sources = answer["log_sources"]
    needed: dict[tuple[str, str | None], int] = {}
    for r in analytics.values():
        for s in {(s["name"], s.get("channel")) for s in r.metadata.get("log_sources", [])}:
            needed[s] = needed.get(s, 0) + 1
    assert {(s["name"], s["channel"]): s["analytics"] for s in sources} == needed
    assert [s["analytics"] for s in sources] == sorted((s["analytics"] for s in sources), reverse=True)


def test_a_log_source_says_what_corresponds_and_what_the_store_holds(
    client: TestClient, analytics: dict[str, Record], serving_db_url: str
) -> None:
    sources = {
        (s["name"], s["channel"]): s for s in covered(client, techniques=["T1003.001"], analytics=True)["log_sources"]
    }
    access = sources[("WinEventLog:Sysmon", "EventCode=10")]
    assert access["resolved"] and access["data_component"] == "Process Access"
    assert [s["logsource"] for s in access["sigma"]] == [{"product": "windows", "category": "process_access"}]
    assert access["sigma"][0]["rules"] == sigma_rules(
        serving_db_url, {"product": "windows", "category": "process_access"}
    )
    assert access["sigma"][0]["rules"].get("sigma", 0) > 0 and access["rules_held"]
    assert access["event_categories"] == ["process"]
    held = held_doc_ids(serving_db_url)
    assert {s["doc_id"]: s["held"] for s in access["schemas"]} == {
        "ossem_dd:windows/sysmon/events/event-10.yml": "ossem_dd:windows/sysmon/events/event-10.yml" in held,
        "ecs:process": True,
    }
    process = sources[("WinEventLog:Sysmon", "EventCode=1")]
    assert {"doc_id": "ossem_dd:windows/sysmon/events/event-1.yml", "held": True} in process["schemas"]
    assert process["splunk"] == [{"data_source": "Sysmon EventID 1", "rules": 0}]  # no Splunk rules in the corpus
    assert process["schema_held"]
    security = sources[("WinEventLog:Security", "EventCode=4673")]
    assert {"product": "windows", "service": "security"} in [s["logsource"] for s in security["sigma"]]


def test_the_gaps_name_analytics_without_rules_or_schemas(client: TestClient, analytics: dict[str, Record]) -> None:
    answer = covered(client, techniques=list(TECHNIQUES), layer=False, analytics=True)
    found = by_id(answer)
    assert answer["gaps"]["analytic_no_detection"] == [
        t for t, c in found.items() if c["analytics"] and not c["detections"]["count"]
    ]
    assert "T1521.003" in answer["gaps"]["analytic_no_detection"]  # a mobile technique: no rule in the corpus
    assert "T1003.001" not in answer["gaps"]["analytic_no_detection"]
    vetting = [
        r.upstream_id
        for r in analytics.values()
        if r.metadata.get("log_sources") and {s["name"] for s in r.metadata["log_sources"]} == {"Application Vetting"}
    ]
    assert vetting and set(vetting) <= set(answer["gaps"]["analytic_no_schema"])
    held = {
        a["analytic_id"] for t in found.values() for p in t["analytics"] for a in p["analytics"] if a["schema_held"]
    }
    assert not held & set(answer["gaps"]["analytic_no_schema"]) and "AN1030" in held
    unresolved = next(s for s in answer["log_sources"] if s["name"] == "Application Vetting")
    assert not unresolved["resolved"] and not unresolved["sigma"] and not unresolved["schema_held"]


def test_platforms_narrow_the_analytics(client: TestClient, analytics: dict[str, Record]) -> None:
    linux = by_id(covered(client, techniques=["T1087.002", "T1003.001"], platforms=["Linux"], analytics=True))
    assert platforms_of(linux["T1087.002"]) == {"Linux": expected_platforms(analytics, "T1087.002")["Linux"]}
    assert linux["T1003.001"]["analytics"] == []
    tactic = by_id(covered(client, tactic="credential-access", platforms=["windows"], layer=False, analytics=True))
    assert set(platforms_of(tactic["T1003.001"])) == {"Windows"}


def test_analytics_are_asked_for_and_private_ones_stay_private(
    client: TestClient, analytics: dict[str, Record]
) -> None:
    bare = covered(client, techniques=["T1218.011"])  # off by default
    assert bare["log_sources"] is None and bare["techniques"][0]["analytics"] is None
    assert bare["gaps"]["analytic_no_detection"] == [] and bare["gaps"]["analytic_no_schema"] == []

    def ids(key: str | None) -> list[str]:
        technique = by_id(covered(client, key, techniques=["T1218.011"], analytics=True))["T1218.011"]
        return [a["analytic_id"] for p in technique["analytics"] for a in p["analytics"]]

    assert ids(None) == ["AN1308"]
    assert ids("gina-key") == ["AN1308", PRIVATE]


def test_the_mcp_tool_lists_the_analytics_as_rest(client: TestClient, analytics: dict[str, Record]) -> None:
    rest = covered(client, techniques=["T1003.001", "T1087.002"], platforms=["windows"], analytics=True)
    tool = call(client, "coverage", techniques=["T1003.001", "T1087.002"], platforms=["windows"], analytics=True)
    assert tool["log_sources"] == rest["log_sources"] and tool["gaps"] == rest["gaps"]
    assert [t["analytics"] for t in tool["techniques"]] == [t["analytics"] for t in rest["techniques"]]


def test_a_folded_parent_gathers_its_sub_techniques_analytics(client: TestClient, analytics: dict[str, Record]) -> None:
    folded = by_id(covered(client, techniques=["T1003.001"], fold_subtechniques=True, analytics=True))
    assert platforms_of(folded["T1003"]) == expected_platforms(analytics, "T1003.001")
    group = covered(client, actor="G0007", analytics=True, layer=False)
    listed = {a["analytic_id"] for t in group["techniques"] for p in t["analytics"] for a in p["analytics"]}
    asked = {t["technique_id"] for t in group["techniques"]}
    assert listed == {an for an, r in analytics.items() if set(r.techniques) & asked}
