"""The pure parts of coverage's analytics: the store's holdings counted from the holdings statement's rows, and
the analytics statement's rows as analytics per platform, log sources and the no-schema gap."""

from __future__ import annotations

from typing import Any

from serving.contract.coverage_models import LogSourceRef
from serving.coverage.analytics import AnalyticRow, analytic_row, assemble_analytics
from serving.coverage.holdings import EMPTY, holdings_from_rows
from serving.coverage.log_sources import shipped_log_sources


def group(source: str, n: int, **metadata: Any) -> dict[str, Any]:  # noqa: ANN401
    return {
        "source": source,
        "doc_id": None,
        "logsource": metadata.get("logsource"),
        "index": metadata.get("index"),
        "data_sources": metadata.get("data_source"),
        "n": n,
    }


ROWS = [
    group("sigma", 5, logsource={"product": "windows", "category": "process_creation"}),
    group("sigma", 2, logsource={"product": "Windows", "service": "security"}),
    group("hayabusa", 3, logsource={"product": "windows", "category": "Process_Creation", "definition": "x"}),
    group("elastic", 4, index=["logs-endpoint.events.process*", "logs-endpoint.events.process-*"]),
    group("elastic", 1, index=["winlogbeat-*", "logs-windows.sysmon_operational-*"]),
    group("splunk_security", 6, data_source=["Sysmon EventID 1", "Sysmon EventID 1 AND Sysmon EventID 11"]),
    {"source": "ossem_dd", "doc_id": "ossem_dd:windows/sysmon/events/event-1.yml", "n": 1},
]


def test_holdings_count_rules_by_what_the_table_names() -> None:
    held = holdings_from_rows(ROWS)
    process = (("product", "windows"), ("category", "process_creation"))
    assert held.sigma_rules(process) == {"sigma": 5, "hayabusa": 3}
    assert held.sigma_rules((("product", "windows"),)) == {"sigma": 7, "hayabusa": 3}  # a logsource with more keys
    assert held.sigma_rules((("product", "windows"), ("service", "security"))) == {"sigma": 2}
    assert held.sigma_rules((("product", "linux"),)) == {}
    assert held.elastic_rules("logs-endpoint.events.process") == 4  # each rule once, however many patterns match
    assert held.elastic_rules("logs-windows.sysmon_operational") == 1
    assert held.elastic_rules("logs-aws.cloudtrail") == 0
    assert held.splunk_rules("sysmon eventid 1") == 6 and held.splunk_rules("Sysmon EventID 11") == 0
    assert held.has_schema("ossem_dd:windows/sysmon/events/event-1.yml") and not held.has_schema("ecs:process")


def row(technique: str, an: str, platforms: list[str], sources: list[dict[str, str]]) -> AnalyticRow:
    return analytic_row(
        {
            "technique": technique,
            "doc_id": f"mitre_attack_detections:{an}",
            "strategy": "DET0001",
            "platforms": platforms,
            "log_sources": sources,
        }
    )


SYSMON_1 = {"name": "WinEventLog:Sysmon", "channel": "EventCode=1", "data_component": "Process Creation"}
AUDITD = {"name": "auditd:SYSCALL", "channel": "execve"}
VETTING = {"name": "Application Vetting", "channel": "None"}


def test_analytics_are_listed_per_platform_with_each_log_source_once() -> None:
    rows = [
        row("T1003.001", "AN0002", ["Windows"], [SYSMON_1]),
        row("T1003.001", "AN0001", ["Linux"], [AUDITD, {"name": "", "channel": "dropped"}]),
        row("T1059.001", "AN0003", ["Windows"], [SYSMON_1]),
        row("T0800", "AN0004", [], [VETTING]),  # ICS: no platform
        row("T0801", "AN0005", ["None"], []),  # no log source
    ]
    part = assemble_analytics(rows, shipped_log_sources(), holdings_from_rows(ROWS))
    lsass = part.by_technique["T1003.001"]
    assert [(p.platform, [a.analytic_id for a in p.analytics]) for p in lsass] == [
        ("Linux", ["AN0001"]),
        ("Windows", ["AN0002"]),
    ]
    assert lsass[0].analytics[0].log_sources == [LogSourceRef(name="auditd:SYSCALL", channel="execve")]
    assert [p.platform for p in part.by_technique["T0800"]] == ["None"]
    assert [(s.name, s.analytics) for s in part.log_sources] == [
        ("WinEventLog:Sysmon", 2),
        ("Application Vetting", 1),
        ("auditd:SYSCALL", 1),
    ]
    sysmon = part.log_sources[0]
    assert sysmon.data_component == "Process Creation" and sysmon.rules_held and sysmon.schema_held
    assert sysmon.sigma[0].rules == {"sigma": 5, "hayabusa": 3}
    assert [(s.doc_id, s.held) for s in sysmon.schemas] == [
        ("ossem_dd:windows/sysmon/events/event-1.yml", True),
        ("ecs:process", False),
    ]
    assert not part.log_sources[1].resolved and not part.log_sources[1].sigma
    # auditd's schema (ecs:process) is not held, and Application Vetting has none; AN0005 needs no log source
    assert part.no_schema == ["AN0001", "AN0004"]
    assert lsass[1].analytics[0].schema_held and not lsass[0].analytics[0].schema_held


def test_nothing_held_means_nothing_held() -> None:
    part = assemble_analytics([row("T1003.001", "AN0002", ["Windows"], [SYSMON_1])], shipped_log_sources(), EMPTY)
    sysmon = part.log_sources[0]
    assert sysmon.resolved and not sysmon.rules_held and not sysmon.schema_held
    assert part.no_schema == ["AN0002"]
