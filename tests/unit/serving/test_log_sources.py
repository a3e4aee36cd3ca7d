"""The ATT&CK log source -> rule sets and schemas table: what it resolves the commonest log sources to, that its
schema ids exist in the real snapshot, that event codes and channels are read as ATT&CK writes them, and that a
bad file is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.sources.parsing import parse_source
from pipeline.sources.registry import default_registry
from secrag.errors import ConfigError
from serving.coverage.log_sources import event_codes, load_log_sources, shipped_log_sources
from tests.plugins.upstream import SNAPSHOT

DOMAINS = ("enterprise", "mobile", "ics")


def attack_log_sources() -> list[tuple[str, str | None]]:
    """Every log-source reference of the three bundles' analytics (read as plain JSON)."""
    found: list[tuple[str, str | None]] = []
    for domain in DOMAINS:
        bundle = json.loads((SNAPSHOT / "mitre_attack" / f"{domain}-attack" / f"{domain}-attack.json").read_text())
        for o in bundle["objects"]:
            if o["type"] == "x-mitre-analytic" and not o.get("revoked") and not o.get("x_mitre_deprecated"):
                found.extend((r["name"], r.get("channel")) for r in o.get("x_mitre_log_source_references", []))
    return found


def test_the_commonest_log_sources_resolve_as_the_rule_sets_name_them() -> None:
    table = shipped_log_sources()
    process = table.resolve("WinEventLog:Security", "EventCode=4688")
    assert process.sigma == (
        (("product", "windows"), ("service", "security")),
        (("product", "windows"), ("category", "process_creation")),
    )
    assert "ossem_dd:windows/etw-providers/Microsoft-Windows-Security-Auditing/events/event-4688.yml" in process.schemas
    assert process.splunk == ("Windows Event Log Security 4688",) and "logs-system.security" in process.elastic
    sysmon = table.resolve("winEventLog:sysmon", "EventCode=1")  # names in any case
    assert sysmon.sigma == ((("product", "windows"), ("category", "process_creation")),)
    assert sysmon.event_categories == ("process",)
    assert sysmon.schemas == ("ossem_dd:windows/sysmon/events/event-1.yml", "ecs:process")
    assert table.resolve("auditd:SYSCALL", "connect").sigma == ((("product", "linux"), ("service", "auditd")),)
    assert "network" in table.resolve("auditd:SYSCALL", "connect").event_categories
    cloud = table.resolve("AWS:CloudTrail", "RunInstances")
    assert cloud.sigma == ((("product", "aws"), ("service", "cloudtrail")),) and cloud.elastic == (
        "logs-aws.cloudtrail",
    )
    # two event codes: both events' targets
    both = table.resolve("WinEventLog:Sysmon", "EventCode=3, 22")
    assert [dict(s)["category"] for s in both.sigma] == ["network_connection", "dns_query"]
    # a free-text channel: the name's own targets only; an unknown name: nothing
    text = table.resolve("WinEventLog:Security", "Firewall Rule Modification")
    assert text.sigma == ((("product", "windows"), ("service", "security")),) and not text.schemas
    assert not table.resolve("Application Vetting", "None").resolved


@pytest.mark.parametrize(
    ("channel", "codes"),
    [
        ("EventCode=4663, 4670, 4656", [4663, 4670, 4656]),
        ("EventCode=4778, EventCode=4779", [4778, 4779]),
        ("eventcode=1", [1]),
        ("System shutdowns due to bugcheck (Event ID 1001)", []),
        ("execve", []),
    ],
)
def test_event_codes_are_read_from_event_code_channels_only(channel: str, codes: list[int]) -> None:
    assert event_codes(channel) == codes


def test_the_table_resolves_most_log_source_references() -> None:
    table = shipped_log_sources()
    references = attack_log_sources()
    resolved = sum(table.resolve(name, channel).resolved for name, channel in references)
    assert len(references) > 4000 and resolved / len(references) > 0.85


def test_every_schema_it_names_exists_in_the_snapshot() -> None:
    known = {
        r.doc_id
        for name in ("ossem_dd", "ecs")
        for r in parse_source(default_registry()[name], SNAPSHOT / name).records
    }
    table = shipped_log_sources()
    listed = {
        doc_id
        for entry in table.log_sources
        for targets in (entry, *entry.events.values(), *entry.channels)
        for doc_id in targets.schemas
    }
    assert listed and sorted(listed - known) == []
    # the per-event ids of the bundles' references: all in the snapshot but Sysmon's event 25 (OSSEM has none)
    filled = {s for name, channel in attack_log_sources() for s in shipped_log_sources().resolve(name, channel).schemas}
    assert sorted(filled - known) == ["ossem_dd:windows/sysmon/events/event-25.yml"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("log_sources:\n  - name: a\n    schemas: [sigma:abc]\n", "sigma:abc"),
        ("log_sources:\n  - name: a\n  - name: b\n    aliases: [A]\n", "named twice"),
        ("log_sources:\n  - name: a\n    channels:\n      - {match: '(', sigma: [{product: x}]}\n", "regular"),
        ("log_sources:\n  - name: a\n    sigma: [{}]\n", "at least one"),
    ],
)
def test_a_bad_table_is_refused_with_its_line(tmp_path: Path, text: str, said: str) -> None:
    bad = tmp_path / "log_sources.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match=said) as raised:
        load_log_sources(bad)
    assert "log_sources.yaml:" in str(raised.value)
