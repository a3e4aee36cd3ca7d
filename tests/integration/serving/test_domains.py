"""ATT&CK's domains in search and map, on a small real store of the three matrices embedded with the real model:
the `domains` filter (ATT&CK documents by their own domain, others by their techniques'), each result's
`domains`, the procedures leg voting with the asked domains' examples, and /v1/map in a domain."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from pipeline.chunking import ChunkConfig
from pipeline.embedding import embed_pending
from pipeline.refresh_inputs import source_row
from pipeline.sources.mitre_lookup import techniques_from_bundle
from pipeline.sources.parsing import parse_source
from pipeline.sources.records import Record
from pipeline.sources.registry import default_registry
from pipeline.store import Store
from secrag.db import database
from secrag.files.package_data import sql_dir
from serving.api.app import create_app
from serving.search.encoder import shared_encoder
from serving.settings import ServingSettings
from tests.plugins.database import migrated_copy
from tests.plugins.upstream import SNAPSHOT

ATTACK = SNAPSHOT / "mitre_attack"
DOMAINS = ("enterprise", "mobile", "ics")
ENTERPRISE_FAMILIES = ("T1003", "T1059", "T1218")
MOBILE_FAMILIES = ("T1624", "T1636", "T1429", "T1437")


def _technique_family(r: Record, families: tuple[str, ...]) -> bool:
    return any(t.split(".")[0] in families for t in r.techniques) or r.metadata.get("kind") == "tactic"


def _kept(source: str, records: tuple[Record, ...]) -> list[Record]:
    """A few hundred chunks in all: some families of Enterprise and Mobile, all of ICS's techniques and tactics,
    and the procedure examples of what is kept."""
    if source == "mitre_attack":
        return [r for r in records if r.upstream_id.split(".")[0] in ENTERPRISE_FAMILIES]
    if source == "mitre_attack_procedures":
        return [r for r in records if r.techniques[0].split(".")[0] in ENTERPRISE_FAMILIES][:60]
    if source == "mitre_attack_mobile":
        return [r for r in records if r.upstream_id.split(".")[0] in MOBILE_FAMILIES or r.metadata["kind"] == "tactic"]
    if source == "mitre_attack_mobile_procedures":
        return [r for r in records if r.techniques[0].split(".")[0] in MOBILE_FAMILIES][:80]
    if source == "mitre_attack_ics":
        return [r for r in records if r.metadata["kind"] in ("technique", "tactic")]
    if source == "mitre_attack_ics_procedures":
        return list(records[:40])
    return [r for r in records if r.techniques][:40]  # sigma: labelled rules (Enterprise techniques)


PUBLISHED = {
    "mitre_attack": ATTACK,
    "mitre_attack_procedures": ATTACK,
    "mitre_attack_mobile": ATTACK,
    "mitre_attack_mobile_procedures": ATTACK,
    "mitre_attack_ics": ATTACK,
    "mitre_attack_ics_procedures": ATTACK,
    "sigma": SNAPSHOT / "sigma",
}


@pytest.fixture(scope="module")
def store_url(pg_server_url: str, template_db: str) -> Iterator[str]:
    with migrated_copy(pg_server_url, template_db, f"secrag_domains_{os.getpid()}") as url:
        registry, store = default_registry(), Store(sql_dir())
        with database.connect(url, autocommit=True) as conn:
            techniques = [t for d in DOMAINS for t in techniques_from_bundle(ATTACK / f"{d}-attack/{d}-attack.json")]
            store.replace_techniques(conn, techniques, "test")
            lookup = store.technique_names(conn)
            for source, root in PUBLISHED.items():
                spec = registry[source]
                if source == "sigma":
                    spec = dataclasses.replace(spec, paths=("rules/windows/**/*lsass*.yml",))
                records = _kept(source, parse_source(spec, root, version="test").records)
                store.register_source(conn, source_row(spec))
                chunking = ChunkConfig()
                store.publish(conn, source=source, version="test", records=records, lookup=lookup, chunking=chunking)
            embed_pending(conn, shared_encoder("all-MiniLM-L6-v2").embedder, sql_dir(), batch_size=128)
            conn.execute("ANALYZE")
        yield url


@pytest.fixture(scope="module")
def api(store_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(store_url))) as client:
        yield client


def search(api: TestClient, query: str, **body: Any) -> list[dict[str, Any]]:  # noqa: ANN401
    response = api.post("/v1/search", json={"query": query, "k": 20, **body})
    assert response.status_code == 200, response.text
    return list(response.json()["results"])


def test_results_say_their_domains(api: TestClient) -> None:
    results = search(api, "lsass memory credential dumping")
    by_source = {r["source"]: r["domains"] for r in results}
    assert by_source.get("sigma") == ["enterprise"]  # a rule's: its techniques'
    assert by_source.get("mitre_attack") == ["enterprise"]
    results = search(api, "android broadcast receivers", filters={"sources": ["mitre_attack_mobile"]})
    assert results and {tuple(r["domains"]) for r in results} == {("mobile",)}


@pytest.mark.parametrize(
    ("query", "domains"),
    [
        ("lsass memory credential dumping", ["enterprise"]),
        ("malicious application registers broadcast receivers", ["mobile"]),
        ("controller firmware update mode", ["ics"]),
        ("persistence of an application", ["mobile", "ics"]),
    ],
)
def test_the_domains_filter_keeps_the_asked_domains(api: TestClient, query: str, domains: list[str]) -> None:
    results = search(api, query, filters={"domains": domains})
    assert results
    assert all(set(r["domains"]) & set(domains) for r in results), [(r["doc_id"], r["domains"]) for r in results]
    unfiltered = search(api, query, k=50)
    outside = [r for r in unfiltered if not set(r["domains"]) & set(domains)]
    assert outside  # the store holds other domains' documents that the query finds without the filter
    assert not {r["doc_id"] for r in outside} & {r["doc_id"] for r in results}


def test_the_domains_filter_keeps_rules_by_their_techniques(api: TestClient) -> None:
    assert any(r["source"] == "sigma" for r in search(api, "lsass", filters={"domains": ["enterprise"]}))
    assert not any(r["source"] == "sigma" for r in search(api, "lsass", filters={"domains": ["mobile", "ics"]}))


@pytest.mark.parametrize("domains", [["pre"], [], ["Enterprise"]])
def test_an_unknown_domain_is_refused(api: TestClient, domains: list[str]) -> None:
    response = api.post("/v1/search", json={"query": "lsass", "filters": {"domains": domains}})
    assert response.status_code == 422, response.text


def test_the_procedures_leg_votes_with_the_asked_domains_examples(api: TestClient) -> None:
    """A one-sentence query in a report's register runs the procedures leg: with `domains`, the Mobile examples
    vote, and Mobile technique documents get a procedures score; by default the leg's examples are Enterprise's."""
    sentence = "The malware registered a broadcast receiver to start itself when the phone finished booting."
    mobile = {"sources": ["mitre_attack_mobile"]}
    voted = search(api, sentence, filters={**mobile, "domains": ["mobile"]})
    assert any(r["scores"]["procedures"] for r in voted)
    assert not any(r["scores"]["procedures"] for r in search(api, sentence, filters=mobile))


def _map(api: TestClient, text: str, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    response = api.post("/v1/map", json={"text": text, "min_score": 0.0, **body})
    assert response.status_code == 200, response.text
    return dict(response.json())


MOBILE_REPORT = (
    "The implant registers a broadcast receiver for BOOT_COMPLETED so that it starts when the device boots. "
    "It reads the victim's SMS messages and uploads them. It records audio through the microphone."
)


def test_a_map_in_the_mobile_domain(api: TestClient) -> None:
    mapped = _map(api, MOBILE_REPORT, domain="mobile")
    assert mapped["techniques"]
    assert {t["domain"] for t in mapped["techniques"]} == {"mobile"}
    assert all(c["doc_id"].startswith("mitre_attack_mobile:") for t in mapped["techniques"] for c in t["citations"])
    assert mapped["layer"]["domain"] == "mobile-attack"
    assert {t["technique_id"].split(".")[0] for t in mapped["techniques"]} <= set(MOBILE_FAMILIES)


def test_a_map_defaults_to_enterprise(api: TestClient) -> None:
    mapped = _map(api, "The attacker dumped LSASS memory with procdump and ran PowerShell scripts.")
    assert mapped["techniques"] and {t["domain"] for t in mapped["techniques"]} == {"enterprise"}
    assert mapped["layer"]["domain"] == "enterprise-attack"
    mobile_text = _map(api, MOBILE_REPORT)  # an Enterprise map finds only Enterprise techniques, whatever the text
    assert {t["domain"] for t in mobile_text["techniques"]} <= {"enterprise"}


def test_a_map_in_an_unknown_domain_is_refused(api: TestClient) -> None:
    response = api.post("/v1/map", json={"text": MOBILE_REPORT, "domain": "pre"})
    assert response.status_code == 422, response.text


def test_the_label_leg_reads_the_asked_domains_names(api: TestClient) -> None:
    """Enterprise and Mobile both name a technique Event Triggered Execution: a search reads Enterprise's names
    (T1546) unless it asks for Mobile, whose full name of T1624.001 then labels its document."""
    query = "Event Triggered Execution: Broadcast Receivers"
    hit = "mitre_attack_mobile:T1624.001"
    default = {r["doc_id"]: r for r in search(api, query)}
    assert hit in default and not default[hit]["scores"]["label"]
    mobile = {r["doc_id"]: r for r in search(api, query, filters={"domains": ["mobile"]})}
    assert mobile[hit]["scores"]["label"]


def test_other_domains_documents_do_not_vote_as_neighbours_unless_asked(api: TestClient) -> None:
    """The neighbours leg's nearest documents are of any source but the ATT&CK sources of the domains not asked
    (Enterprise's by default): a Mobile query's Mobile neighbours vote only when the search asks for Mobile."""
    query = "the app registers a broadcast receiver to start when the phone boots"
    mobile = {"sources": ["mitre_attack_mobile"]}
    assert not any(r["scores"]["neighbours"] for r in search(api, query, filters=mobile))
    assert any(r["scores"]["neighbours"] for r in search(api, query, filters={**mobile, "domains": ["mobile"]}))
