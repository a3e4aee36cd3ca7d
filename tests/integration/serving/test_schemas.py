"""Telemetry schemas on the real corpus store: a field name (exact, dotted, another product's, misspelt)
finds the tables and field sets that hold it, and a query-writing plan puts the schema first, beside the
detections over that telemetry."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from .conftest import doc_ids, search
from .test_plans import plan

SCHEMAS = ["ossem_dd", "ecs"]
SYSMON_1 = "ossem_dd:windows/sysmon/events/event-1.yml"
DEFENDER = "ossem_dd:windows/microsoftdefenderforendpoint/events/DeviceProcessEvents_v1.yml"


@pytest.mark.parametrize(
    "query, expected",
    [
        ("CommandLine", SYSMON_1),
        ("InitiatingProcessCommandLine", DEFENDER),
        ("process.command_line", "ecs:process"),
        ("process.comand_line", "ecs:process"),  # misspelt
        ("dns.question.name", "ecs:dns"),
    ],
)
def test_a_field_name_finds_the_records_that_hold_it(client: TestClient, query: str, expected: str) -> None:
    payload = search(client, query, k=5, filters={"sources": SCHEMAS})
    assert expected in doc_ids(payload)[:3], doc_ids(payload)


def test_the_matching_field_is_in_the_snippet(client: TestClient) -> None:
    payload = search(client, "InitiatingProcessCommandLine", k=3, filters={"sources": SCHEMAS})
    top = payload["results"][0]
    assert top["doc_id"] == DEFENDER and "<mark>InitiatingProcessCommandLine</mark>" in (top["snippet"] or "")


def test_platform_and_log_source_filters(client: TestClient) -> None:
    linux = search(client, "process command line", k=10, filters={"sources": ["ossem_dd"], "platforms": ["linux"]})
    assert doc_ids(linux) == ["ossem_dd:linux/osquery/events/processes.yml"]
    sysmon = search(client, "process command line", k=10, filters={"sources": ["ossem_dd"], "tags_any": ["sysmon"]})
    assert set(doc_ids(sysmon)) == {SYSMON_1, "ossem_dd:windows/sysmon/events/event-3.yml"}


def test_schema_sources_are_listed_with_their_category(client: TestClient) -> None:
    sources = {s["name"]: s for s in client.get("/v1/sources").json()["sources"]}
    assert sources["ossem_dd"]["category"] == sources["ecs"]["category"] == "schema"


def test_a_query_writing_plan_opens_with_the_schema_and_the_detections_over_it(client: TestClient) -> None:
    result = plan(client, "which table and fields do I query to detect encoded powershell command lines")
    assert result["query_type"] == "schema" and result["plan_name"] == "schema"
    categories = [c["category"] for c in result["selected"]]
    assert categories.count("schema") >= 2 and "detection" in categories
    assert result["context"].index("## Telemetry schemas") < result["context"].index("## Detections")
    chosen = {c["doc_id"] for c in result["selected"]}
    assert {SYSMON_1, DEFENDER, "ecs:process"} & chosen  # the process-creation telemetry the rules read


def test_a_misspelt_field_name_is_corrected_to_the_schema_s_own(client: TestClient) -> None:
    payload = search(client, "InitiatingProcesCommandLine", k=3, filters={"sources": SCHEMAS})
    assert payload["corrections"] == {"initiatingprocescommandline": "initiatingprocesscommandline"}
    assert doc_ids(payload)[0] == DEFENDER
