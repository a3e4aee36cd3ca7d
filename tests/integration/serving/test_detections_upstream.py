"""ATT&CK's detection strategies and analytics as the API answers them, against counts read from the three
bundles with plain JSON (upstream_detections.py): the snapshot's mitre_attack_detections and mitre_attack are
published through the pipeline's parse and publish (no vectors: these reads need none), and the API's
documents (enumerated by the change feed, read by id) must hold the same strategies and analytics per domain,
the same analytics per technique (the analytics' own labels and the technique documents' links) and the same
log sources per analytic. Leaving one object out of the upstream count makes the comparison fail."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from secrag.attack_domains import TECHNIQUE_SOURCES
from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.upstream import SNAPSHOT

from . import upstream_detections, upstream_store
from .upstream_detections import DOMAINS, Bundles, Detections

SOURCE = "mitre_attack_detections"
# All read ATT&CK's snapshot folder. The technique sources of the three domains (whose documents link their
# analytics); their own technique counts per domain (issue 45 item 2) are checked beside these.
PUBLISHED = (SOURCE, *TECHNIQUE_SOURCES.values())
ATTACK = SNAPSHOT / "mitre_attack"


@pytest.fixture(scope="module")
def upstream() -> Bundles:
    return upstream_detections.bundles(ATTACK)


@pytest.fixture(scope="module")
def store_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    with migrated_copy(pg_server_url, template_db, f"secrag_detections_upstream_{os.getpid()}") as url:
        with database.connect(url, autocommit=True) as conn:  # the technique lookup of the three domains
            bundles = [ATTACK / f"{d}-attack/{d}-attack.json" for d in DOMAINS]
            upstream_store.publish(conn, dict.fromkeys(PUBLISHED, ATTACK), bundles)
        yield url


@pytest.fixture(scope="module")
def api(store_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(store_url))) as client:
        yield client


def _upstream_id(doc: dict[str, Any]) -> str:
    return str(doc["doc_id"]).split(":", 1)[1]


@pytest.fixture(scope="module")
def documents(api: TestClient) -> dict[str, dict[str, Any]]:
    """The source's documents by upstream id (DET and AN ids), read through the API."""
    return {_upstream_id(d): d for d in upstream_store.documents(api, upstream_store.doc_ids(api, SOURCE))}


@pytest.fixture(scope="module")
def answer(documents: dict[str, dict[str, Any]]) -> Detections:
    """The API's strategies, analytics, analytics per technique (their labels) and log sources per analytic."""
    out = Detections()
    for upstream_id, doc in documents.items():
        meta = doc["metadata"]
        if meta["kind"] == "detection-strategy":
            out.strategies[upstream_id] = meta["domain"]
            continue
        out.analytics[upstream_id] = meta["domain"]
        out.log_sources[upstream_id] = len(meta.get("log_sources", ()))
        for technique in doc["techniques"]:
            out.by_technique.setdefault(technique, set()).add(upstream_id)
    return out


def test_the_api_holds_what_the_bundles_count(answer: Detections, upstream: Bundles) -> None:
    counted = upstream_detections.count(upstream)
    assert upstream_detections.disagreements(answer, counted) == []
    # v18: 691/1,739 Enterprise, 124/211 Mobile, 83/82 ICS strategies/analytics
    per_domain = {
        d: (list(counted.strategies.values()).count(d), list(counted.analytics.values()).count(d)) for d in DOMAINS
    }
    assert per_domain == {"enterprise": (691, 1739), "mobile": (124, 211), "ics": (83, 82)}
    assert sum(counted.log_sources.values()) == 4126 + 294 + 236


# One object (or one analytic's log source) left out of the independent count, by ATT&CK id: the comparison
# must see it. A detects relationship has no ATT&CK id: DET0103's is dropped by its strategy's.
DROPPED = {
    "a strategy": ("enterprise", "DET0103"),
    "an analytic": ("enterprise", "AN0286"),
    "a Mobile analytic": ("mobile", "AN1740"),
    "an ICS strategy without analytics": ("ics", "DET0748"),
    "a detects relationship": ("enterprise", "DET0103"),
    "a log source": ("enterprise", "AN0286"),
}


def _dropped(upstream: Bundles, case: str) -> Bundles:
    domain, attack_id = DROPPED[case]
    stix_id = next(o["id"] for o in upstream[domain] if upstream_detections.attack_id(o) == attack_id)
    if case == "a log source":
        return upstream_detections.without_log_source(upstream, stix_id)
    if case == "a detects relationship":
        objects = upstream[domain]
        stix_id = next(
            o["id"] for o in objects if o.get("relationship_type") == "detects" and o["source_ref"] == stix_id
        )
    return upstream_detections.without(upstream, stix_id)


@pytest.mark.parametrize("case", DROPPED)
def test_one_object_less_upstream_is_a_disagreement(answer: Detections, upstream: Bundles, case: str) -> None:
    found = upstream_detections.disagreements(answer, upstream_detections.count(_dropped(upstream, case)))
    assert found, case


def test_technique_documents_link_their_analytics(api: TestClient, upstream: Bundles) -> None:
    """Each technique's document, in its domain's source, lists the analytics the bundle gives it
    (metadata.analytics) and its one strategy (metadata.detection_strategies)."""
    counted = upstream_detections.count(upstream)
    domain_of = {t: counted.analytics[min(ans)] for t, ans in counted.by_technique.items()}
    assert sorted(Counter(domain_of.values()).items()) == [("enterprise", 691), ("ics", 82), ("mobile", 124)]
    docs = upstream_store.documents(api, sorted(f"{TECHNIQUE_SOURCES[domain_of[t]]}:{t}" for t in counted.by_technique))
    assert {_upstream_id(d): set(d["metadata"].get("analytics", ())) for d in docs} == counted.by_technique
    assert {d["metadata"]["domain"] for d in docs} == set(DOMAINS)
    strategies = [[s["id"] for s in d["metadata"]["detection_strategies"]] for d in docs]
    assert all(len(s) == 1 and s[0] in counted.strategies for s in strategies)


def test_a_strategy_s_document_shows_its_analytics(api: TestClient, documents: dict[str, dict[str, Any]]) -> None:
    response = api.get(f"/v1/docs/{SOURCE}:DET0103")
    assert response.status_code == 200, response.text
    strategy = response.json()
    assert strategy["title"] == "Behavioral Detection of Network Share Connection Removal via CLI and SMB Disconnects"
    assert strategy["techniques"] == ["T1070.005"]
    analytics = strategy["metadata"]["analytics"]
    assert [a["id"] for a in analytics] == ["AN0286"]
    assert [s["data_component_id"] for s in analytics[0]["log_sources"]] == ["DC0067", "DC0032", "DC0064", "DC0085"]
    assert "Analytic AN0286:\nPlatform: Windows" in strategy["body"]
    # Each analytic is a document of its own, `<source>:<AN id>`, naming its strategy.
    (analytic,) = upstream_store.documents(api, [f"{SOURCE}:{a['id']}" for a in analytics])
    assert (analytic["metadata"]["strategy"], analytic["techniques"]) == ("DET0103", ["T1070.005"])
    # Every strategy's listed analytics are the analytics naming it.
    named: dict[str, list[str]] = {}
    for upstream_id, doc in sorted(documents.items()):
        if doc["metadata"]["kind"] == "analytic":
            named.setdefault(doc["metadata"]["strategy"], []).append(upstream_id)
    listed = {
        i: sorted(a["id"] for a in d["metadata"].get("analytics", ()))
        for i, d in documents.items()
        if d["metadata"]["kind"] == "detection-strategy" and d["metadata"].get("analytics")
    }
    assert listed == named
