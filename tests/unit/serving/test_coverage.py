"""The pure parts of POST /v1/coverage: which source fills which kind, rows to per-technique coverage, the gaps,
the request's one-input rule and the Navigator layer."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from serving.contract.coverage_models import CoverageItem, CoverageRequest
from serving.coverage.counts import Row, assemble, gaps, technique_order
from serving.coverage.kinds import kind_of, source_kinds
from serving.coverage.layer import comment, coverage_layer, score
from serving.coverage.paging import Page, page
from serving.plans.telemetry import shipped_telemetry
from serving.search.catalog import SourceFacts
from tests.unit.serving.test_map_layer import assert_valid_layer


def facts(category: str | None, kind: str = "online") -> SourceFacts:
    return SourceFacts(category=category, kind=kind, version=None)


@pytest.mark.parametrize(
    ("source", "source_facts", "kind"),
    [
        ("sigma", facts("detection"), "detections"),
        ("splunk_security", facts("detection"), "detections"),
        ("atomic", facts("test"), "tests"),
        ("stratus_red_team", facts("test"), "tests"),
        ("mitre_d3fend", facts("technique"), "countermeasures"),
        ("mitre_attack", facts("technique"), "countermeasures"),  # its mitigations only (the statement's rule)
        ("acme_notes", facts("user", "user_folder"), "notes"),
        ("acme_notes", facts(None, "user_folder"), "notes"),
        ("capec", facts("technique"), None),
        ("cisa_kev", facts("vulnerability"), None),
        ("ossem_dd", facts("schema"), None),
    ],
)
def test_each_source_counts_as_its_kind(source: str, source_facts: SourceFacts, kind: str | None) -> None:
    assert kind_of(source, source_facts) == kind


def test_source_kinds_leave_out_sources_that_do_not_count() -> None:
    assert source_kinds({"sigma": facts("detection"), "capec": facts("technique"), "atomic": facts("test")}) == {
        "atomic": "tests",
        "sigma": "detections",
    }


def no_schemas(logsource: object) -> list[str]:  # a telemetry table that maps nothing
    return []


def item(doc_id: str, title: str, source: str) -> CoverageItem:
    return CoverageItem(doc_id=doc_id, title=title, source=source)


ROWS = [
    Row("T1003.001", "detections", "elastic", 1, (item("elastic:e", "B rule", "elastic"),)),
    Row("T1003.001", "detections", "sigma", 3, (item("sigma:a", "A rule", "sigma"), item("sigma:c", "C", "sigma"))),
    Row("T1003.001", "tests", "atomic", 2, (item("atomic:1", "Dump", "atomic"),)),
    Row("T1059", None, None, 0, ()),
    Row("T1218.011", "tests", "atomic", 1, (item("atomic:2", "Rundll32", "atomic"),)),
    Row("T1003", "countermeasures", "mitre_d3fend", 1, (item("d3f:x", "Hardening", "mitre_d3fend"),)),
]


def test_rows_become_coverage_per_technique_in_id_order() -> None:
    techniques = assemble(ROWS, {"T1003.001": "OS Credential Dumping: LSASS Memory"}, top=2, schemas_for=no_schemas)
    assert [t.technique_id for t in techniques] == ["T1003", "T1003.001", "T1059", "T1218.011"]
    lsass = techniques[1]
    assert lsass.name == "OS Credential Dumping: LSASS Memory" and techniques[0].name is None
    assert lsass.detections.count == 4 and lsass.detections.by_source == {"elastic": 1, "sigma": 3}
    assert [i.doc_id for i in lsass.detections.top] == ["sigma:a", "elastic:e"]  # by title across rule sets
    assert lsass.tests.count == 2 and lsass.countermeasures.count == 0 and lsass.notes.top == []
    assert techniques[2].detections.count == 0 and techniques[2].detections.by_source == {}


def test_detections_logsources_become_telemetry_needs() -> None:
    process = {"product": "Windows", "category": "process_creation", "definition": "Sysmon or 4688"}
    rows = [
        Row("T1003.001", "detections", "sigma", 2, (), process),
        Row("T1003.001", "detections", "sigma", 1, (), {"product": "windows", "category": "process_creation"}),
        Row("T1003.001", "detections", "sigma", 1, (), {"product": "windows", "service": "security"}),
        Row("T1003.001", "detections", "elastic", 4, (), None),
    ]
    table = shipped_telemetry()
    [lsass] = assemble(rows, {}, top=3, schemas_for=table.schemas_for)
    assert lsass.detections.count == 8 and lsass.detections.by_source == {"elastic": 4, "sigma": 4}
    assert [(t.logsource, t.detections) for t in lsass.telemetry] == [
        ({"product": "windows", "category": "process_creation"}, 3),
        ({"product": "windows", "service": "security"}, 1),
    ]
    assert lsass.telemetry[0].schemas == table.schemas_for({"product": "windows", "category": "process_creation"})
    assert lsass.telemetry[0].schemas  # the shipped table maps process creation


def test_gaps() -> None:
    found = gaps(assemble(ROWS, {}, top=3, schemas_for=no_schemas))
    assert found.no_detection == ["T1003", "T1059", "T1218.011"]
    assert found.test_no_detection == ["T1218.011"]
    assert found.detection_no_test == []


def test_technique_order_puts_a_parent_before_its_subtechniques() -> None:
    ids = ["T1005", "T1003.010", "T1003.002", "T1003"]
    assert sorted(ids, key=technique_order) == ["T1003", "T1003.002", "T1003.010", "T1005"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"techniques": ["T1003"], "actor": "G0007"},
        {"actor": "G0007", "tactic": "execution"},
        {"tactic": "execution", "platforms": ["amiga"]},
        {"tactic": "execution; drop"},
        {"techniques": ["x"]},
        {"actor": "G16"},
        {"techniques": []},
    ],
)
def test_a_request_names_techniques_or_an_actor(body: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CoverageRequest.model_validate(body)


def test_a_request_normalises_its_ids() -> None:
    req = CoverageRequest.model_validate({"techniques": ["t1003.001", "T1003.001", "T1059"]})
    assert req.techniques == ["T1003.001", "T1059"]
    assert CoverageRequest.model_validate({"actor": "s0002"}).actor == "S0002"
    tactic = CoverageRequest.model_validate({"tactic": "Credential Access", "platforms": ["Windows", "k8s"]})
    assert tactic.tactic == "credential-access" and tactic.platforms == ["kubernetes", "windows"]


def test_the_layer_scores_kinds_and_comments_counts() -> None:
    techniques = assemble(ROWS, {}, top=3, schemas_for=no_schemas)
    layer = coverage_layer(techniques, asked="G0007")
    assert_valid_layer(layer.model_dump(mode="json"))
    assert layer.name == "secrag coverage of G0007"
    assert [(t.techniqueID, t.score) for t in layer.techniques] == [
        ("T1003", 1),
        ("T1003.001", 2),
        ("T1059", 0),
        ("T1218.011", 1),
    ]
    assert [score(t) for t in techniques] == [1, 2, 0, 1]
    assert comment(techniques[1]) == "detections 4 (elastic 1, sigma 3)\ntests 2 (atomic 2)\ncountermeasures 0\nnotes 0"
    assert layer.techniques[0].showSubtechniques and not layer.techniques[1].showSubtechniques


def test_a_page_is_the_techniques_after_the_cursor_in_technique_order() -> None:
    asked = ["T1005", "T1003.010", "T1003", "T1003.002", "T1003"]
    first = page(asked, None, 2)
    assert (first.ids, first.total, first.more) == (["T1003", "T1003.002"], 4, True)
    second = page(asked, first.ids[-1], 2)
    assert (second.ids, second.more) == (["T1003.010", "T1005"], False)
    assert page(asked, "T1003.005", 10).ids == ["T1003.010", "T1005"]  # a cursor need not be asked
    assert page(asked, "T1005", 10) == Page([], 4, False)
