"""POST /v1/map, the MCP tool `map` and `secrag map` over the serving corpus: a report's techniques with their
sentences, offsets, citations and Navigator layer; determinism, limits, and private folders voting for their
own callers only."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from secrag.enrichment import enrich
from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.unit.serving.test_map_layer import assert_valid_layer

from .test_mcp import call, rpc

SENTENCES = {
    "lsass": "The attackers dumped credentials from LSASS memory with Mimikatz on the domain controller.",
    "powershell": "Then they ran encoded PowerShell commands to download the next stage.",
    "rundll32": "They used rundll32.exe to proxy execution of a malicious DLL, e.g. a fake update.",
    "injection": "the loader injected its payload into the memory of a legitimate running process",
}
REPORT = (
    "Intrusion summary\n\n"
    f"{SENTENCES['lsass']} {SENTENCES['powershell']}\n"
    f"{SENTENCES['rundll32']}\n\n"
    "Observed:\n"
    f"- {SENTENCES['injection']}\n"
)
EXPECTED = {"lsass": "T1003.001", "powershell": "T1059.001", "rundll32": "T1218.011"}
VOLATILE = {"took_ms"}


def mapped(client: TestClient, text: str = REPORT, key: str | None = None, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    headers = {"X-API-Key": key} if key else {}
    response = client.post("/v1/map", json={"text": text, **body}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in VOLATILE}


def by_id(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["technique_id"]: t for t in answer["techniques"]}


def test_a_report_maps_to_the_techniques_of_its_sentences(client: TestClient) -> None:
    answer = mapped(client)
    assert answer["sentences"] == 4 and answer["min_score"] == 0.3 and answer["model"]
    found = by_id(answer)
    for name, technique in EXPECTED.items():
        assert technique in found, (name, list(found))
        texts = [s["text"] for s in found[technique]["sentences"]]
        assert SENTENCES[name] in texts, (technique, texts)
    scores = [t["score"] for t in answer["techniques"]]
    assert scores == sorted(scores, reverse=True) and all(s >= 0.3 for s in scores)
    lsass = found["T1003.001"]
    assert lsass["name"] == "OS Credential Dumping: LSASS Memory" and lsass["tactics"] == ["credential-access"]
    assert lsass["sentences"][0]["rank"] == 1 and lsass["sentences"][0]["vote"] == 0.35
    for t in answer["techniques"]:
        for s in t["sentences"]:  # offsets point at the sentence in the text as sent
            assert REPORT[s["start"] : s["end"]] == s["text"]
        [citation] = t["citations"]
        assert citation["doc_id"] == f"mitre_attack:{t['technique_id']}" and citation["source"] == "mitre_attack"
        assert citation["passages"] and all(
            p["chunk_id"].startswith(citation["doc_id"] + "#") for p in citation["passages"]
        )
    assert [c["number"] for t in answer["techniques"] for c in t["citations"]] == list(
        range(1, len(answer["techniques"]) + 1)
    )
    layer = answer["layer"]
    assert_valid_layer(layer)
    assert [(t["techniqueID"], t["score"]) for t in layer["techniques"]] == [
        (t["technique_id"], round(100 * t["score"])) for t in answer["techniques"]
    ]


def test_the_same_text_gives_the_same_answer(client: TestClient) -> None:
    first = stable(mapped(client, min_score=0, limit=100))
    assert stable(mapped(client, min_score=0, limit=100)) == first
    assert stable(mapped(client, text=REPORT.replace("\n", "\r\n"), min_score=0, limit=100))["techniques"]


def test_min_score_limit_and_the_layer_flag(client: TestClient) -> None:
    everything = mapped(client, min_score=0, limit=100)
    assert len(everything["techniques"]) > len(EXPECTED) and everything["omitted"] == 0
    two = mapped(client, min_score=0, limit=2, layer=False)
    assert two["techniques"] == everything["techniques"][:2] and two["layer"] is None
    assert two["omitted"] == len(everything["techniques"]) - 2
    strict = mapped(client, min_score=0.5)
    assert all(t["score"] >= 0.5 for t in strict["techniques"])
    assert {t["technique_id"] for t in strict["techniques"]} < {t["technique_id"] for t in everything["techniques"]}
    assert mapped(client, text="Too short.")["techniques"] == []  # no sentence of three words: nothing to map


def test_a_sentence_naming_a_technique_votes_one(client: TestClient) -> None:
    answer = mapped(client, text="The operator's tooling matches ATT&CK technique T1087.002 closely.")
    assert answer["techniques"][0]["technique_id"] == "T1087.002" and answer["techniques"][0]["score"] == 1.0


def test_sentences_are_encoded_as_search_encodes_them(client: TestClient) -> None:
    searcher = client.app.state.service.searcher  # type: ignore[attr-defined]
    query = " Dumping LSASS with T1003.001 tooling "
    [vector] = searcher.query_vectors([query])
    expected = searcher.encoder.encode(enrich(query.strip(), searcher.catalog.technique_lookup()))
    assert vector.tolist() == expected.tolist()


@pytest.fixture(scope="module")
def small_limits(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    settings = settings_for(serving_db_url, map_max_chars=1024, map_max_sentences=10, map_max_techniques=20)
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.mark.parametrize(
    ("body", "kind", "said"),
    [
        ({"text": "x" * 1025}, "invalid_field", "SECRAG_MAP_MAX_CHARS"),
        ({"text": "Mimikatz dumped the credentials. " * 11}, "invalid_field", "SECRAG_MAP_MAX_SENTENCES"),
        ({"text": REPORT, "limit": 21}, "invalid_field", "SECRAG_MAP_MAX_TECHNIQUES"),
        ({"text": "   "}, "validation", "blank"),
        ({"text": REPORT, "min_score": 1.5}, "validation", "min_score"),
        ({"text": REPORT, "layer": "yes"}, "validation", "layer"),
    ],
)
def test_limits_are_422_with_their_kind(small_limits: TestClient, body: dict[str, Any], kind: str, said: str) -> None:
    response = small_limits.post("/v1/map", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["kind"] == kind and said in response.text


def test_limits_are_stated_and_a_huge_body_is_413(small_limits: TestClient) -> None:
    schema = small_limits.get("/openapi.json").json()["components"]["schemas"]["MapRequest"]["properties"]
    assert schema["text"]["maxLength"] == 1024 and schema["limit"]["maximum"] == 20
    tool = next(t for t in rpc(small_limits, "tools/list", {})["result"]["tools"] if t["name"] == "map")
    assert tool["inputSchema"]["properties"]["text"]["maxLength"] == 1024
    assert tool["inputSchema"]["properties"]["limit"]["maximum"] == 20
    huge = small_limits.post("/v1/map", json={"text": "a " * 600_000})
    assert huge.status_code == 413 and huge.json()["kind"] == "too_large"


def test_the_mcp_tool_answers_as_rest(client: TestClient) -> None:
    rest = mapped(client, key="alice-key", limit=5)
    tool = call(client, "map", "alice-key", text=REPORT, limit=5)
    assert stable(tool) == stable(rest)


# --- private folders -------------------------------------------------------------------------------------
TENANT = "initech"  # no key of the suite belongs to it (conftest.KEYS)
VAULT = "map_vault"
ARCHIVE = "The operators packed the stolen files into a password protected archive before sending them out."
PRIVATE_TECHNIQUE = "T1087.001"  # Local Account discovery: nothing the archive sentence says


@pytest.fixture
def vault(serving_db_url: str, settings_for: Callable[..., ServingSettings], api_keys_file: Path, tmp_path: Path):  # noqa: ANN201
    """(a fresh app knowing ivan-key of the private tenant, the owner's connection to seed with); unseeded after."""
    keys = tmp_path / "keys.yaml"
    keys.write_text(
        api_keys_file.read_text(encoding="utf-8")
        + f"  - {{key_sha256: {hashlib.sha256(b'ivan-key').hexdigest()}, tenant: {TENANT}, user: ivan, groups: []}}\n",
        encoding="utf-8",
    )
    with database.connect(serving_db_url, autocommit=True) as owner:
        yield (lambda: TestClient(create_app(settings_for(serving_db_url, api_keys_file=keys)))), owner
        owner.execute("DELETE FROM chunks WHERE source = %s", [VAULT])
        owner.execute("DELETE FROM documents WHERE source = %s", [VAULT])
        owner.execute("DELETE FROM embeddings WHERE content_hash = %s", [f"{VAULT}-notes"])
        owner.execute("DELETE FROM sources WHERE name = %s", [VAULT])


def _seed(owner: psycopg.Connection, client: TestClient) -> None:
    """Private notes of the tenant labelled with PRIVATE_TECHNIQUE whose chunks hold the archive sentence's own
    vector: the nearest documents of that sentence (as many as vote in the neighbours leg), so for the tenant's
    callers the neighbours leg votes for PRIVATE_TECHNIQUE alone."""
    searcher = client.app.state.service.searcher  # type: ignore[attr-defined]
    [vector] = searcher.query_vectors([ARCHIVE])
    params = {
        "source": VAULT,
        "hash": f"{VAULT}-notes",
        "tenant": TENANT,
        "technique": PRIVATE_TECHNIQUE,
        "text": ARCHIVE,
        "model": searcher.encoder.model_id,
        "vector": "[" + ",".join(str(float(x)) for x in vector) + "]",
    }
    owner.execute(
        "INSERT INTO sources (name, kind, description, category) "
        "SELECT %(source)s, kind, description, category FROM sources WHERE name = 'globex_notes'",
        params,
    )
    owner.execute(
        "INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%(hash)s, %(model)s, %(vector)s::vector)",
        params,
    )
    for i in range(client.app.state.service.search_config.neighbours.documents):  # type: ignore[attr-defined]
        note = {**params, "doc": f"{VAULT}:note-{i}"}
        owner.execute(
            "INSERT INTO documents (doc_id, source, source_version, title, url, body, metadata, techniques, "
            "platforms, tags, content_hash, tenant, media_type) VALUES (%(doc)s, %(source)s, 'v1', 'vault note', "
            "NULL, %(text)s, '{}', ARRAY[%(technique)s], '{}', '{}', %(hash)s, %(tenant)s, 'text/plain')",
            note,
        )
        owner.execute(
            "INSERT INTO chunks (chunk_id, doc_id, source, ordinal, title, text, enriched_text, identifiers, "
            "content_hash, char_start, char_end) VALUES (%(doc)s || '#0', %(doc)s, %(source)s, 0, 'vault note', "
            "%(text)s, %(text)s, '', %(hash)s, 0, length(%(text)s))",
            note,
        )


def test_a_private_note_votes_for_its_own_tenant_only(vault: Any) -> None:  # noqa: ANN401
    fresh_app, owner = vault
    callers = [None, "alice-key", "gina-key", "ivan-key"]
    with fresh_app() as client:
        before = {key: stable(mapped(client, text=ARCHIVE, key=key, min_score=0, limit=100)) for key in callers}
        assert all(PRIVATE_TECHNIQUE not in by_id(answer) for answer in before.values())
        _seed(owner, client)
    with fresh_app() as client:  # a new app: no catalog cache carries the store before the seed
        for key in callers[:-1]:
            assert stable(mapped(client, text=ARCHIVE, key=key, min_score=0, limit=100)) == before[key], key
        own = mapped(client, text=ARCHIVE, key="ivan-key", min_score=0, limit=100)
        assert PRIVATE_TECHNIQUE in by_id(own), [t["technique_id"] for t in own["techniques"]]
        assert TENANT not in json.dumps(own) and VAULT not in json.dumps(own)  # it votes; it is never shown


# --- secrag map --------------------------------------------------------------------------------------------
def test_the_command_prints_the_techniques_and_writes_the_layer(
    client: TestClient, serving_db_url: str, tmp_path: Path
) -> None:
    report = tmp_path / "report.txt"
    report.write_text(REPORT, encoding="utf-8")
    layer = tmp_path / "layer.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k != "DATABASE_URL"}
    env["DATABASE_URL"] = serving_db_url
    run = subprocess.run(
        [sys.executable, "-m", "secrag_cli.main", "map", str(report), "--layer", str(layer), "--limit", "5"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    rest = mapped(client, limit=5)
    lines = run.stdout.splitlines()
    assert lines[0].split()[:3] == ["technique", "score", "sentences"]
    for t in rest["techniques"]:
        assert any(line.startswith(t["technique_id"]) and f"{t['score']:.3f}" in line for line in lines), run.stdout
    assert f"in {rest['sentences']} sentences" in lines[-2] and str(layer) in lines[-1]
    written = json.loads(layer.read_text(encoding="utf-8"))
    assert_valid_layer(written)
    assert written == rest["layer"]
    as_json = subprocess.run(
        [sys.executable, "-m", "secrag_cli.main", "map", "-", "--json", "--limit", "5"],
        env=env,
        input=REPORT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert as_json.returncode == 0, as_json.stderr
    assert stable(json.loads(as_json.stdout))["techniques"] == rest["techniques"]


def test_a_domain_the_store_does_not_hold_is_not_found(client: TestClient) -> None:
    """The serving corpus holds Enterprise's ATT&CK only: a Mobile map is a 404 naming the missing source."""
    response = client.post("/v1/map", json={"text": "The app reads the victim's SMS messages.", "domain": "mobile"})
    assert response.status_code == 404, response.text
    assert response.json()["kind"] == "not_found" and "mitre_attack_mobile" in response.json()["detail"]
