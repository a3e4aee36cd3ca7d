"""The ATLAS parser on the compiled dist/ATLAS.yaml, plus inline edge cases."""

from __future__ import annotations

import pytest

from pipeline.sources.parsers import atlas_yaml
from pipeline.sources.parsing import parse_source, select_files
from pipeline.sources.records import Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
ROOT = UPSTREAM / "mitre_atlas"


@pytest.fixture(scope="module")
def atlas() -> dict[str, Record]:
    outcome = parse_source(default_registry()["mitre_atlas"], ROOT)
    assert len(outcome.records) == 278
    assert outcome.skipped == ()
    assert outcome.files_seen == 1
    assert outcome.with_techniques == 82
    return {r.doc_id: r for r in outcome.records}


def test_kinds(atlas: dict[str, Record]) -> None:
    kinds = [r.metadata["kind"] for r in atlas.values()]
    assert {k: kinds.count(k) for k in set(kinds)} == {
        "tactic": 16,
        "technique": 170,
        "mitigation": 35,
        "case-study": 57,
    }
    with_refs = [r for r in atlas.values() if r.metadata["kind"] == "technique" and r.techniques]
    assert len(with_refs) == 34


def test_technique_with_attack_reference(atlas: dict[str, Record]) -> None:
    r = atlas["mitre_atlas:AML.T0000"]
    assert r.title == "Search Open Technical Databases"
    assert r.url == "https://atlas.mitre.org/techniques/AML.T0000"
    assert r.techniques == ("T1596",)
    assert "Tactics: Reconnaissance" in r.body
    assert r.metadata["created"] == "2021-05-13"  # dates become ISO strings


def test_sub_technique_title_and_no_borrowed_ids(atlas: dict[str, Record]) -> None:
    r = atlas["mitre_atlas:AML.T0000.000"]
    assert r.title == "Search Open Technical Databases: Journals and Conference Proceedings"
    # "AML.T0000" must never be read as the ATT&CK id T0000.
    assert r.techniques == ()
    assert not any("T0000" in t for rec in atlas.values() for t in rec.techniques)


def test_tactic_mitigation_case_study(atlas: dict[str, Record]) -> None:
    tactic = atlas["mitre_atlas:AML.TA0002"]
    assert (tactic.title, tactic.url, tactic.techniques) == (
        "Reconnaissance",
        "https://atlas.mitre.org/tactics/AML.TA0002",
        (),
    )
    assert tactic.metadata["attack_reference"] == "TA0043"
    mitigation = atlas["mitre_atlas:AML.M0000"]
    assert mitigation.title == "Limit Public Release of Information"
    assert mitigation.techniques == ("T1594", "T1596")
    assert "AML.T0003 Search Victim-Owned Websites" in mitigation.body
    study = atlas["mitre_atlas:AML.CS0000"]
    assert study.url == "https://atlas.mitre.org/studies/AML.CS0000"
    assert "Palo Alto Networks" in study.body
    assert "AML.T0043.003" in study.metadata["atlas_techniques"]


def test_only_the_compiled_file_is_selected() -> None:
    files = select_files(default_registry()["mitre_atlas"], ROOT)
    assert [f.relative_to(ROOT).as_posix() for f in files] == ["dist/ATLAS.yaml"]


def test_source_yaml_with_include_tags_is_refused() -> None:
    # Trap: data/*.yaml use `!include`, which a safe loader rejects; the parser reports it cleanly.
    rel = "data/data.yaml"
    file = SourceFile(source="mitre_atlas", root=ROOT, rel=rel, data=(ROOT / rel).read_bytes())
    with pytest.raises(ParseError):
        list(atlas_yaml.parse(file))


@pytest.mark.parametrize(
    "text", ["- a\n- b\n", "id: ATLAS\n", "matrices: 3\n", "matrices: [1]\n", "matrices:\n- techniques: 5\n"]
)
def test_structurally_bad_files_raise(text: str) -> None:
    file = SourceFile(source="mitre_atlas", root=ROOT, rel="dist/ATLAS.yaml", data=text.encode())
    with pytest.raises(ParseError):
        list(atlas_yaml.parse(file))


def test_minimal_file_and_unknown_procedure_technique() -> None:
    text = """
matrices:
- id: ATLAS
  tactics: [{id: AML.TA0001, name: Staging, description: d}]
  techniques:
  - {id: AML.T0001, name: Tech, description: x, tactics: [AML.TA0001],
     ATT&CK-reference: {id: T1059.001, url: u}}
case-studies:
- id: AML.CS0001
  name: Study
  summary: s
  procedure: [{tactic: AML.TA0001, technique: AML.T0001, description: did},
              {tactic: AML.TA0001, technique: AML.T9999, description: unknown}]
"""
    file = SourceFile(source="mitre_atlas", root=ROOT, rel="dist/ATLAS.yaml", data=text.encode())
    records = {r.upstream_id: r for r in atlas_yaml.parse(file)}
    assert sorted(records) == ["AML.CS0001", "AML.T0001", "AML.TA0001"]
    assert records["AML.CS0001"].techniques == ("T1059.001",)
    assert "AML.T9999: unknown" in records["AML.CS0001"].body
