"""ATT&CK's Mobile and ICS matrices as the API answers them, against counts read from the bundles with plain JSON
(upstream_domains.py): the three domains' technique sources and the Mobile and ICS procedure examples are
published through the pipeline's parse and publish (no vectors: these reads need none), with the technique lookup
of all three bundles. The API's documents of each matrix (enumerated by the change feed, read by id) must hold its
active techniques, and /v1/coverage in a domain must find each tactic's and each group's techniques there; one
technique left out of the upstream count makes the comparison fail."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.upstream import SNAPSHOT

from . import upstream_domains, upstream_store
from .upstream_domains import DOMAINS, Matrix

ATTACK = SNAPSHOT / "mitre_attack"  # every ATT&CK source reads this folder
SOURCES = {"enterprise": "mitre_attack", "mobile": "mitre_attack_mobile", "ics": "mitre_attack_ics"}
PUBLISHED = (*SOURCES.values(), "mitre_attack_mobile_procedures", "mitre_attack_ics_procedures")


@pytest.fixture(scope="module")
def upstream() -> dict[str, Matrix]:
    return {domain: upstream_domains.matrix(ATTACK, domain) for domain in DOMAINS}


@pytest.fixture(scope="module")
def store_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    with migrated_copy(pg_server_url, template_db, f"secrag_domains_upstream_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:
            bundles = [ATTACK / f"{d}-attack/{d}-attack.json" for d in DOMAINS]
            upstream_store.publish(conn, dict.fromkeys(PUBLISHED, ATTACK), bundles)
        yield url


@pytest.fixture(scope="module")
def api(store_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(store_url))) as client:
        yield client


@pytest.fixture(scope="module")
def techniques(api: TestClient) -> dict[str, dict[str, str]]:
    """Domain -> the API's technique documents of that domain's source: ATT&CK id -> the domain they say."""
    out: dict[str, dict[str, str]] = {}
    for domain in ("mobile", "ics"):
        docs = upstream_store.documents(api, upstream_store.doc_ids(api, SOURCES[domain]))
        out[domain] = {
            d["doc_id"].split(":", 1)[1]: d["metadata"]["domain"]
            for d in docs
            if d["metadata"]["kind"] in ("technique", "sub-technique")
        }
    return out


def _coverage(api: TestClient, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    """The coverage answer with the techniques of every page (`next_cursor` passed back as `cursor`)."""
    techniques: list[dict[str, Any]] = []
    cursor = None
    while True:
        page = {"top": 1, "layer": False, "analytics": False, "limit": 200, **body}
        response = api.post("/v1/coverage", json={**page, **({"cursor": cursor} if cursor else {})})
        assert response.status_code == 200, response.text
        answer = dict(response.json())
        techniques += answer["techniques"]
        cursor = answer["next_cursor"]
        if cursor is None:
            return {**answer, "techniques": techniques}


def disagreements(answer: dict[str, dict[str, str]], upstream: dict[str, Matrix]) -> list[str]:
    found = []
    for domain, documents in answer.items():
        wanted = upstream[domain].techniques
        if set(documents) != wanted:
            found.append(f"{domain}: API {len(documents)} techniques, upstream {len(wanted)}")
        found += [f"{domain}: {tid} says {said}" for tid, said in sorted(documents.items()) if said != domain]
    return found


def test_each_matrix_s_techniques_are_its_documents(
    techniques: dict[str, dict[str, str]], upstream: dict[str, Matrix]
) -> None:
    assert {d: len(m.techniques) for d, m in upstream.items()} == {"enterprise": 691, "mobile": 124, "ics": 83}
    assert disagreements(techniques, upstream) == []


@pytest.mark.parametrize("domain", ["mobile", "ics"])
def test_one_technique_less_upstream_is_a_disagreement(
    techniques: dict[str, dict[str, str]], upstream: dict[str, Matrix], domain: str
) -> None:
    fewer = {**upstream, domain: Matrix(techniques=set(sorted(upstream[domain].techniques)[1:]))}
    assert disagreements(techniques, fewer) != []


@pytest.mark.parametrize("domain", ["enterprise", "mobile", "ics"])
def test_a_tactic_is_read_in_its_domain(api: TestClient, upstream: dict[str, Matrix], domain: str) -> None:
    """Every tactic of the domain (Mobile and Enterprise share names such as persistence): its techniques there."""
    tactics = sorted(upstream[domain].by_tactic)
    assert len(tactics) == {"enterprise": 14, "mobile": 12, "ics": 12}[domain]
    for tactic in tactics if domain != "enterprise" else ["persistence", "impact"]:
        answer = _coverage(api, tactic=tactic, domain=domain)
        found = {t["technique_id"]: t["domain"] for t in answer["techniques"]}
        assert set(found) == upstream[domain].by_tactic[tactic], (domain, tactic)
        assert set(found.values()) == {domain}


def test_a_tactic_without_a_domain_is_enterprise_s(api: TestClient, upstream: dict[str, Matrix]) -> None:
    answer = _coverage(api, tactic="persistence")
    assert {t["technique_id"] for t in answer["techniques"]} == upstream["enterprise"].by_tactic["persistence"]


@pytest.mark.parametrize("domain", ["mobile", "ics"])
def test_a_group_s_techniques_in_a_domain(api: TestClient, upstream: dict[str, Matrix], domain: str) -> None:
    groups = upstream[domain].by_group
    assert groups  # Mobile: 13 groups with techniques, ICS: 12
    for group, wanted in sorted(groups.items()):
        answer = _coverage(api, actor=group, domain=domain)
        assert {t["technique_id"] for t in answer["techniques"]} == wanted, (domain, group)


def test_mitigations_of_a_domain_count_as_countermeasures(api: TestClient) -> None:
    answer = _coverage(api, techniques=["T0800", "T1624.001"], domain="ics")
    found = {t["technique_id"]: t for t in answer["techniques"]}
    assert (found["T0800"]["domain"], found["T1624.001"]["domain"]) == ("ics", "mobile")  # ids name their domain
    assert found["T0800"]["countermeasures"]["by_source"].get("mitre_attack_ics", 0) > 0
    assert "mitre_attack" not in found["T0800"]["countermeasures"]["by_source"]


def test_a_coverage_layer_is_in_its_domain(api: TestClient) -> None:
    response = api.post("/v1/coverage", json={"tactic": "inhibit-response-function", "domain": "ics", "top": 1})
    assert response.status_code == 200, response.text
    assert response.json()["layer"]["domain"] == "ics-attack"


def test_an_actor_of_another_domain_is_not_found(api: TestClient, upstream: dict[str, Matrix]) -> None:
    """Bouncing Golf (G0097) is a Mobile group only: Enterprise knows no technique of it."""
    assert "G0097" in upstream["mobile"].by_group
    response = api.post("/v1/coverage", json={"actor": "G0097", "layer": False})
    assert response.status_code == 404 and "enterprise" in response.json()["detail"], response.text
    assert _coverage(api, actor="G0097", domain="mobile")["techniques"]
