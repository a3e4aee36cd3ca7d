"""POST /v1/coverage against counts computed independently from the upstream snapshots: the whole ATT&CK,
Sigma, Elastic, Splunk, CAR, Atomic, Stratus Red Team and D3FEND snapshots are published (no vectors: coverage
needs none), and for a sample of techniques, common and rare, sub-techniques and folded parents, each rule
set's count must equal the one read from the upstream files with plain code (upstream_labels.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pipeline.sources.registry import default_registry
from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.upstream import SNAPSHOT

from . import upstream_labels, upstream_store
from .upstream_labels import Labels

# What each published source counts as (serving/coverage/kinds.py, POST /v1/coverage's description).
KIND_OF = {
    "sigma": "detections",
    "elastic": "detections",
    "splunk_security": "detections",
    "mitre_car": "detections",
    "atomic": "tests",
    "stratus_red_team": "tests",
    "mitre_d3fend": "countermeasures",
    "mitre_attack": "countermeasures",  # its mitigations only
}
KINDS = ("detections", "tests", "countermeasures")
# Common and rare techniques and sub-techniques: hundreds of rules down to none (T1600), cloud ones that
# Stratus Red Team tests (T1562.008, T1098.001, T1666), the one D3FEND labels (T1087.002), mitigation only (T1596).
SAMPLE = [
    "T1059.001", "T1003.001", "T1105", "T1078", "T1218.011", "T1055", "T1562.001", "T1053.005", "T1070.004",
    "T1087.002", "T1548.002", "T1562.008", "T1098.001", "T1485", "T1611", "T1552.005", "T1127.001", "T1546.008",
    "T1134.004", "T1496", "T1001.003", "T1666", "T1596", "T1600",
]  # fmt: skip
PARENTS = ["T1003", "T1059", "T1098", "T1562", "T1070", "T1552"]
GROUP = "G0007"  # APT28


@pytest.fixture(scope="module")
def labels() -> dict[str, Labels]:
    """Source -> technique -> the upstream ids labelled with it, read from the snapshot with plain code."""
    return {name: counter(SNAPSHOT / folder) for name, (folder, counter) in upstream_labels.COUNTERS.items()}


@pytest.fixture(scope="module")
def store_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    with migrated_copy(pg_server_url, template_db, f"secrag_coverage_upstream_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:
            # the technique table: names, and the sub-techniques a folded parent counts
            bundle = SNAPSHOT / "mitre_attack" / default_registry()["mitre_attack"].paths[0]
            upstream_store.publish(conn, {source: SNAPSHOT / source for source in KIND_OF}, [bundle])
        yield url


@pytest.fixture(scope="module")
def api(store_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(store_url))) as client:
        yield client


def covered(api: TestClient, **body: Any) -> dict[str, dict[str, Any]]:  # noqa: ANN401
    """Every technique of the coverage answer, its pages followed (`next_cursor` passed back as `cursor`)."""
    found: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        page = {"top": 1, "layer": False, "limit": 200, **body, **({"cursor": cursor} if cursor else {})}
        response = api.post("/v1/coverage", json=page)
        assert response.status_code == 200, response.text
        answer = response.json()
        found.update((t["technique_id"], t) for t in answer["techniques"])
        cursor = answer["next_cursor"]
        if cursor is None:
            return found


def expected(labels: dict[str, Labels], technique: str, subtechniques: list[str]) -> dict[str, dict[str, int]]:
    """Kind -> source -> how many upstream records name the technique (or one of the sub-techniques)."""
    kinds: dict[str, dict[str, int]] = {kind: {} for kind in KINDS}
    for source, kind in KIND_OF.items():
        n = upstream_labels.count(labels[source], technique, subtechniques)
        if n:
            kinds[kind][source] = n
    return kinds


def disagreements(answer: dict[str, dict[str, Any]], wanted: dict[str, dict[str, dict[str, int]]]) -> list[str]:
    found = []
    for technique, kinds in wanted.items():
        for kind, by_source in kinds.items():
            got = answer[technique][kind]
            if got["by_source"] != by_source or got["count"] != sum(by_source.values()):
                found.append(f"{technique} {kind}: coverage {got['by_source']}, upstream {by_source}")
    return found


def test_sample_counts_equal_the_upstream_files(api: TestClient, labels: dict[str, Labels]) -> None:
    answer = covered(api, techniques=SAMPLE)
    assert sorted(answer) == sorted(SAMPLE)
    wanted = {t: expected(labels, t, []) for t in SAMPLE}
    assert disagreements(answer, wanted) == []
    # the sample is spread: hundreds of detections, a handful, none; tests and countermeasures of each source
    detections = sorted(sum(wanted[t]["detections"].values()) for t in SAMPLE)
    assert detections[0] == 0 and detections[-1] > 300 and any(0 < n < 10 for n in detections)
    assert {s for t in SAMPLE for kind in wanted[t].values() for s in kind} == set(KIND_OF)


def test_folded_parents_count_their_sub_techniques_once(api: TestClient, labels: dict[str, Labels]) -> None:
    # A folded parent counts the labels of its sub-techniques as the technique table lists them (the
    # `labels` step of the `coverage` statement, sql/queries/serving.sql): the bundle's, retired ones too.
    ids = upstream_labels.attack_technique_ids(SNAPSHOT / "mitre_attack")
    answer = covered(api, techniques=PARENTS, fold_subtechniques=True)
    wanted = {p: expected(labels, p, sorted(t for t in ids if t.startswith(f"{p}."))) for p in PARENTS}
    assert disagreements(answer, wanted) == []
    unfolded = covered(api, techniques=PARENTS)
    assert all(answer[p]["detections"]["count"] > unfolded[p]["detections"]["count"] for p in PARENTS)


def test_a_group_gives_the_techniques_it_uses_upstream(api: TestClient, labels: dict[str, Labels]) -> None:
    # only mitre_attack is published (not its procedure examples): the group's techniques are its own
    # document's, the active techniques it `uses`
    uses = upstream_labels.group_techniques(SNAPSHOT / "mitre_attack", GROUP)
    answer = covered(api, actor=GROUP)
    assert set(answer) == uses and len(uses) > 50
    assert disagreements(answer, {t: expected(labels, t, []) for t in uses}) == []
