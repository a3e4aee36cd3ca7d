"""The one vocabulary of query classes: the classifiers return only its names, the configs name all of them."""

from __future__ import annotations

import pytest

from secrag import identifiers
from serving.contract.query_classes import QUERY_SHAPES, QUERY_TYPES, SHAPE_TYPES, type_of_logged
from serving.plans.classify import classify
from serving.plans.plans_file import load_plans
from serving.search import analysis as search
from serving.settings.api import default_plans_file

RULES = load_plans(default_plans_file()).classification


def test_shapes_are_what_search_analysis_answers() -> None:
    kinds = [kind for kind, _ in identifiers.KINDS]
    assert set(QUERY_SHAPES) == search.IDENTIFIER_TYPES | {"keyword", "sentence", "natural"}
    assert list(QUERY_SHAPES[: len(kinds)]) == kinds
    for query in ("T1003", "CVE-2021-44228", "lsass", "how do attackers dump credentials from lsass"):
        assert search.classify(query) in QUERY_SHAPES


@pytest.mark.parametrize(
    ("shape", "query"), [("technique", "T1003"), ("sub_technique", "T1003.001"), ("cve", "CVE-2021-44228")]
)
def test_a_shape_that_decides_a_type_agrees_with_the_classifier(shape: str, query: str) -> None:
    assert search.classify(query) == shape
    assert classify(query, RULES).query_type == SHAPE_TYPES[shape]  # type: ignore[index]


def test_every_type_has_a_rule_and_a_plan() -> None:
    config = load_plans(default_plans_file())
    assert {*RULES.id_rules, *RULES.keywords} == set(QUERY_TYPES) - {"default"}
    assert set(config.overrides) == set(QUERY_TYPES) - {"default"}


def test_logged_classes() -> None:
    assert type_of_logged("detection") == "detection"
    assert type_of_logged("cve") == "vulnerability"
    assert type_of_logged("natural") is None and type_of_logged("weather") is None and type_of_logged(None) is None


@pytest.mark.parametrize(
    "query",
    [
        "Identifies abuse of the Windows Update Auto Update Client (wuauclt.exe) to load an arbitrary DLL.",
        "Detects PowerShell scripts that use Set-MpPreference to weaken Defender.",
        "This rule detects potential sudo token manipulation through process injection.",
        "A machine learning job has identified a user performing privileged operations.",
        "  looks for unusual parent processes of cmd.exe",
        "The following analytic identifies the use of AdFind for domain discovery.",
        "Detect usage of the built-in curl utility to download a payload.",
    ],
)
def test_a_rule_description_is_in_the_detection_register(query: str) -> None:
    assert search.detection_register(query)
    analysis = search.analyse(query)
    assert analysis.query_type == "natural" and not analysis.report_sentence  # no sentence path, no procedures


@pytest.mark.parametrize(
    "query",
    [
        "creates a scheduled task on the system that provides persistence.",
        "The actor identifies targets through spearphishing.",
        "Detection of the implant was hampered by its packing.",
        "Identifiers of the C2 servers were hard-coded.",
    ],
)
def test_a_report_sentence_is_not(query: str) -> None:
    assert not search.detection_register(query)
    assert search.analyse(query).report_sentence
