"""The D3FEND parser on the real Turtle ontology, plus Turtle/JSON-LD equivalence and edge cases."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import rdflib

from pipeline.sources.parsers import d3fend_rdf
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import ParseOutcome, Record, SourceFile
from pipeline.sources.registry import default_registry
from secrag.errors import ParseError
from tests.plugins.upstream import SNAPSHOT

UPSTREAM = SNAPSHOT
ROOT = UPSTREAM / "mitre_d3fend"


@pytest.fixture(scope="module")
def outcome() -> ParseOutcome:
    # The 2.5 MB Turtle file parses in about a second: `bench/build.py --parse-only --only mitre_d3fend`.
    return parse_source(default_registry()["mitre_d3fend"], ROOT)


@pytest.fixture(scope="module")
def d3fend(outcome: ParseOutcome) -> dict[str, Record]:
    return {r.doc_id: r for r in outcome.records}


def test_counts(outcome: ParseOutcome) -> None:
    # 475 classes carry a d3fend-id, 471 also a definition; 30 analytic techniques reuse an id upstream.
    assert len(outcome.records) == 441
    assert outcome.files_seen == 1
    assert len(outcome.skipped) == 30
    assert all(s.reason.startswith("duplicate id mitre_d3fend:D3A-") for s in outcome.skipped)
    assert outcome.with_techniques == 1


def test_defensive_technique(d3fend: dict[str, Record]) -> None:
    r = d3fend["mitre_d3fend:D3-PSA"]
    assert r.title == "Process Spawn Analysis"
    assert r.url == "https://d3fend.mitre.org/technique/d3f:ProcessSpawnAnalysis/"
    assert r.tags == ("detect",)
    assert "Parent: Process Analysis (D3-PA)" in r.body
    assert "analyzes: Create Process, Process" in r.body
    assert "## How it works" in r.body
    assert r.metadata["tactic"] == "Detect"


def test_top_level_technique_tactic_and_synonyms(d3fend: dict[str, Record]) -> None:
    r = d3fend["mitre_d3fend:D3-AMED"]
    assert (r.title, r.tags) == ("Access Mediation", ("isolate",))
    assert "Synonyms: Access Control" in r.body


def test_direct_attack_link_and_missing_definition(d3fend: dict[str, Record]) -> None:
    assert d3fend["mitre_d3fend:D3-DTP"].techniques == ("T1087.002",)
    # Somers' D has an id but no definition; Spearman's Rank Correlation Coefficient neither.
    assert "mitre_d3fend:D3A-SRCC" not in d3fend
    assert d3fend["mitre_d3fend:D3A-SD"].title != "Somers' D"


def test_duplicate_upstream_ids_keep_the_first_class_by_iri(d3fend: dict[str, Record]) -> None:
    # Deontic Logic and Description Logic are both D3A-DL upstream.
    assert d3fend["mitre_d3fend:D3A-DL"].title == "Deontic Logic"


_TTL = """
@prefix : <http://d3fend.mitre.org/ontologies/d3fend.owl#> .
@prefix owl: <http://www.w3.org/2002/07/owl#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:Detect a owl:Class ; rdfs:label "Detect" .
:DefensiveTechnique a owl:Class ; rdfs:label "Defensive Technique" ; :display-baseurl "/technique/" .
:FileAnalysis a owl:Class ; rdfs:label "File Analysis" ; :d3fend-id "D3-FA" ;
    rdfs:subClassOf :DefensiveTechnique, [ a owl:Restriction ; owl:onProperty :enables ;
                                           owl:someValuesFrom :Detect ] ;
    :definition "Analyze files." .
:FileHashing a owl:Class ; rdfs:label "File Hashing" ; :d3fend-id "D3-FH" ;
    rdfs:subClassOf :FileAnalysis, [ a owl:Restriction ; owl:onProperty :analyzes ;
                                     owl:someValuesFrom :T1003 ] ;
    :definition "Hash files." ; :synonym "Checksums" .
:T1003 a owl:Class ; rdfs:label "OS Credential Dumping" ; :attack-id "T1003" .
:NoDefinition a owl:Class ; rdfs:label "No Definition" ; :d3fend-id "D3-ND" .
"""


def _records(rel: str, data: bytes) -> dict[str, Record]:
    file = SourceFile(source="mitre_d3fend", root=ROOT, rel=rel, data=data)
    return {r.upstream_id: r for r in d3fend_rdf.parse(file)}


def test_turtle_and_json_ld_give_the_same_records() -> None:
    graph = rdflib.Graph().parse(data=_TTL, format="turtle")
    json_ld = graph.serialize(format="json-ld").encode()
    from_ttl = _records("src/ontology/mini.ttl", _TTL.encode())
    from_json = _records("d3fend.json", json_ld)
    assert sorted(from_ttl) == ["D3-FA", "D3-FH"]
    assert {k: replace(r, path="") for k, r in from_ttl.items()} == {
        k: replace(r, path="") for k, r in from_json.items()
    }
    hashing = from_ttl["D3-FH"]
    assert hashing.techniques == ("T1003",)
    assert hashing.tags == ("detect",)  # tactic inherited from the parent technique
    assert hashing.url == "https://d3fend.mitre.org/technique/d3f:FileHashing/"


def test_json_ld_with_remote_context_is_refused() -> None:
    doc = {"@context": "https://example.org/context.jsonld", "@graph": []}
    with pytest.raises(ParseError, match="remote @context"):
        _records("d3fend.json", json.dumps(doc).encode())


@pytest.mark.parametrize(
    ("rel", "data"),
    [
        ("src/ontology/bad.ttl", b"@prefix : <x> .\n:a :b"),
        ("d3fend.json", b"{nope"),
        ("src/ontology/unknown.txt", b"anything"),
    ],
)
def test_malformed_files_raise(rel: str, data: bytes) -> None:
    with pytest.raises(ParseError):
        _records(rel, data)
