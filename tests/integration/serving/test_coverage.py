"""POST /v1/coverage and the MCP tool `coverage` over the serving corpus: counts against the store's labels,
sub-techniques folded, a group's techniques, private folders counting for their own callers only, gaps, the
Navigator layer and the limits."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from tests.unit.serving.test_map_layer import assert_valid_layer

from .test_mcp import call

KIND_OF = {"sigma": "detections", "atomic": "tests", "mitre_d3fend": "countermeasures"}
VOLATILE = {"took_ms"}


def covered(client: TestClient, key: str | None = None, **body: Any) -> dict[str, Any]:  # noqa: ANN401
    headers = {"X-API-Key": key} if key else {}
    response = client.post("/v1/coverage", json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def labelled(url: str, technique: str, *, fold: bool = False) -> dict[str, dict[str, int]]:
    """The public documents labelled with the technique (or, folded, with it or one of its sub-techniques),
    per kind and source, read straight from the store."""
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT d.source, count(*) FROM documents d WHERE d.tenant IS NULL AND EXISTS ("
            " SELECT 1 FROM unnest(d.techniques) t WHERE t = %(t)s OR (%(fold)s AND t LIKE %(t)s || '.%%'))"
            " AND (d.source <> 'mitre_attack' OR d.metadata->>'kind' = 'mitigation') GROUP BY d.source",
            {"t": technique, "fold": fold},
        ).fetchall()
    kinds: dict[str, dict[str, int]] = {}
    for source, n in rows:
        if source in KIND_OF:
            kinds.setdefault(KIND_OF[source], {})[source] = n
    return kinds


def by_id(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["technique_id"]: t for t in answer["techniques"]}


def every_page(client: TestClient, key: str | None = None, **body: Any) -> list[dict[str, Any]]:  # noqa: ANN401
    """Each page of a coverage answer, its `next_cursor` passed back as `cursor` until the last one."""
    pages: list[dict[str, Any]] = []
    cursor = None
    while True:
        answer = covered(client, key, **body, **({"cursor": cursor} if cursor else {}))
        pages.append(answer)
        cursor = answer["next_cursor"]
        assert answer["truncated"] is (cursor is not None) and len(pages) <= answer["total"]
        if cursor is None:
            return pages


def every_technique(pages: list[dict[str, Any]]) -> list[str]:
    return [t["technique_id"] for page in pages for t in page["techniques"]]


def test_counts_are_the_store_labels(client: TestClient, serving_db_url: str) -> None:
    asked = ["T1003.001", "T1059.001", "T1218.011", "T1087.002", "t1055"]
    answer = covered(client, techniques=asked)
    found = by_id(answer)
    assert list(found) == ["T1003.001", "T1055", "T1059.001", "T1087.002", "T1218.011"]
    for technique, coverage in found.items():
        expected = labelled(serving_db_url, technique)
        for kind in ("detections", "tests", "countermeasures"):
            assert coverage[kind]["by_source"] == expected.get(kind, {}), (technique, kind)
            assert coverage[kind]["count"] == sum(expected.get(kind, {}).values())
            top = coverage[kind]["top"]
            assert len(top) == min(3, coverage[kind]["count"])
            assert [(i["title"], i["doc_id"]) for i in top] == sorted((i["title"], i["doc_id"]) for i in top)
        assert coverage["notes"]["count"] == 0  # anonymous: no folder counts
    lsass = found["T1003.001"]
    assert lsass["name"] == "OS Credential Dumping: LSASS Memory"
    assert lsass["detections"]["count"] > 3 and lsass["tests"]["count"] > 0
    assert all(i["source"] == "sigma" for i in lsass["detections"]["top"])
    gaps = answer["gaps"]
    assert gaps["no_detection"] == [t for t, c in found.items() if not c["detections"]["count"]]
    assert "T1218.011" in gaps["test_no_detection"] and "T1003.001" not in gaps["no_detection"]
    assert gaps["detection_no_test"] == [
        t for t, c in found.items() if c["detections"]["count"] and not c["tests"]["count"]
    ]


def test_telemetry_is_the_logsources_of_the_detections(client: TestClient, serving_db_url: str) -> None:
    with database.connect(serving_db_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT lower(metadata->'logsource'->>'product'), lower(metadata->'logsource'->>'category'),"
            " lower(metadata->'logsource'->>'service'), count(*) FROM documents"
            " WHERE source = 'sigma' AND 'T1003.001' = ANY(techniques) GROUP BY 1, 2, 3"
        ).fetchall()
    expected = {
        tuple(sorted((k, v) for k, v in zip(("product", "category", "service"), row[:3], strict=True) if v)): row[3]
        for row in rows
    }
    lsass = by_id(covered(client, techniques=["T1003.001"], top=10))["T1003.001"]
    telemetry = lsass["telemetry"]
    assert lsass["telemetry_count"] == len(expected) > 3
    listed = {tuple(sorted(t["logsource"].items())): t["detections"] for t in telemetry}
    assert listed.items() <= expected.items() and len(listed) == min(10, len(expected))
    assert [t["detections"] for t in telemetry] == sorted((t["detections"] for t in telemetry), reverse=True)
    first = by_id(covered(client, techniques=["T1003.001"], top=3))["T1003.001"]  # the most read, `top` of them
    assert first["telemetry"] == telemetry[:3] and first["telemetry_count"] == len(expected)
    process = next(t for t in telemetry if t["logsource"] == {"product": "windows", "category": "process_creation"})
    assert "ossem_dd:windows/sysmon/events/event-1.yml" in process["schemas"]


def test_sub_techniques_fold_into_their_parents(client: TestClient, serving_db_url: str) -> None:
    answer = covered(client, techniques=["T1003.001", "T1003", "T1059.001"], fold_subtechniques=True, top=5)
    found = by_id(answer)
    assert list(found) == ["T1003", "T1059"]
    for technique, coverage in found.items():
        expected = labelled(serving_db_url, technique, fold=True)
        assert coverage["detections"]["by_source"] == expected.get("detections", {})
        assert coverage["tests"]["by_source"] == expected.get("tests", {})
        assert len(coverage["detections"]["top"]) == min(5, coverage["detections"]["count"])
    unfolded = by_id(covered(client, techniques=["T1003.001"]))["T1003.001"]
    assert found["T1003"]["detections"]["count"] >= unfolded["detections"]["count"]


def test_a_private_folder_counts_for_its_own_callers_only(client: TestClient) -> None:
    def notes(key: str | None) -> dict[str, int]:
        return by_id(covered(client, key, techniques=["T1003.001"]))["T1003.001"]["notes"]["by_source"]

    assert notes(None) == {}
    assert notes("alice-key") == {"acme_notes": 3, "acme_shared": 3}
    assert notes("bob-key") == {"acme_red": 3, "acme_shared": 3}
    assert notes("gina-key") == {"globex_notes": 3}
    public = by_id(covered(client, techniques=["T1003.001"]))["T1003.001"]
    alice = by_id(covered(client, "alice-key", techniques=["T1003.001"]))["T1003.001"]
    assert {k: alice[k] for k in ("detections", "tests")} == {k: public[k] for k in ("detections", "tests")}


def test_a_group_gives_its_techniques(client: TestClient, serving_db_url: str) -> None:
    with database.connect(serving_db_url, autocommit=True) as conn:
        [(uses,)] = conn.execute("SELECT techniques FROM documents WHERE doc_id = 'mitre_attack:G0007'").fetchall()
    pages = every_page(client, actor="g0007")
    assert pages[0]["actor"] == "G0007" and uses
    assert sorted(every_technique(pages)) == sorted(set(uses)) and pages[0]["total"] == len(set(uses))
    folded = every_page(client, actor="G0007", fold_subtechniques=True)
    assert set(every_technique(folded)) == {t.split(".")[0] for t in uses}
    missing = client.post("/v1/coverage", json={"actor": "G9999"})
    assert missing.status_code == 404 and missing.json()["kind"] == "not_found"


def test_the_layer_is_coloured_by_coverage(client: TestClient) -> None:
    answer = covered(client, techniques=["T1003.001", "T1218.011", "T1087.002"])
    layer = answer["layer"]
    assert_valid_layer(layer)
    scores = {t["techniqueID"]: t["score"] for t in layer["techniques"]}
    for technique, coverage in by_id(answer).items():
        kinds = sum(1 for k in ("detections", "tests", "countermeasures") if coverage[k]["count"])
        assert scores[technique] == kinds
    comment = next(t["comment"] for t in layer["techniques"] if t["techniqueID"] == "T1003.001")
    assert comment.startswith("detections ") and "(sigma " in comment
    assert layer["gradient"]["minValue"] == 0 and layer["gradient"]["maxValue"] == 3
    assert covered(client, techniques=["T1003.001"], layer=False)["layer"] is None


def tactic_techniques(url: str, tactic: str, platforms: list[str] | None) -> set[str]:
    with database.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT m.id FROM mitre_techniques m JOIN documents d ON d.doc_id = 'mitre_attack:' || m.id"
            " WHERE %(tactic)s = ANY(m.tactics) AND NOT m.revoked AND NOT m.deprecated"
            " AND (%(platforms)s::text[] IS NULL OR d.platforms && %(platforms)s::text[])",
            {"tactic": tactic, "platforms": platforms},
        ).fetchall()
    return {r[0] for r in rows}


def test_a_tactic_and_platforms_give_their_techniques(client: TestClient, serving_db_url: str) -> None:
    every = every_page(client, tactic="Credential Access", layer=False)
    assert every[0]["tactic"] == "credential-access"
    ids = set(every_technique(every))
    assert ids == tactic_techniques(serving_db_url, "credential-access", None) and "T1003.001" in ids
    linux = covered(client, tactic="credential-access", platforms=["Linux"], limit=200)
    narrowed = {t["technique_id"] for t in linux["techniques"]}
    assert narrowed == tactic_techniques(serving_db_url, "credential-access", ["linux"]) and narrowed < ids
    assert linux["layer"]["name"] == "secrag coverage of credential-access"
    missing = client.post("/v1/coverage", json={"tactic": "no-such-tactic"})
    assert missing.status_code == 404 and missing.json()["kind"] == "not_found"


ACTOR = "G9001"  # no ATT&CK group has this id


@pytest.fixture
def procedures(serving_db_url: str) -> Iterator[None]:
    """Procedure examples of ACTOR: a public one (T1218.011) and one in globex's reach only (T1087.001)."""
    with database.connect(serving_db_url, autocommit=True) as owner:
        owner.execute(
            "INSERT INTO sources (name, kind, description, category) VALUES "
            "('mitre_attack_procedures', 'online', 'procedure examples', 'technique') ON CONFLICT DO NOTHING"
        )
        for n, (technique, tenant) in enumerate((("T1218.011", None), ("T1087.001", "globex"))):
            owner.execute(
                "INSERT INTO documents (doc_id, source, source_version, title, url, body, metadata, techniques,"
                " platforms, tags, content_hash, tenant, media_type) VALUES (%(doc)s, 'mitre_attack_procedures',"
                " 'test', %(title)s, NULL, 'example', %(metadata)s, ARRAY[%(technique)s], '{}', '{}', %(doc)s,"
                " %(tenant)s, 'text/plain')",
                {
                    "doc": f"mitre_attack_procedures:test-{n}",
                    "title": f"Test actor ({ACTOR}) uses {technique}",
                    "metadata": f'{{"kind": "procedure", "actor_id": "{ACTOR}"}}',
                    "technique": technique,
                    "tenant": tenant,
                },
            )
        yield
        owner.execute("DELETE FROM documents WHERE source = 'mitre_attack_procedures'")
        owner.execute("DELETE FROM sources WHERE name = 'mitre_attack_procedures'")


@pytest.mark.usefixtures("procedures")
def test_an_actor_gives_the_techniques_of_its_procedure_examples(client: TestClient) -> None:
    def techniques(key: str | None) -> list[str]:
        return [t["technique_id"] for t in covered(client, key, actor=ACTOR)["techniques"]]

    assert techniques(None) == ["T1218.011"]
    assert techniques("gina-key") == ["T1087.001", "T1218.011"]


@pytest.fixture
def mitigation(serving_db_url: str) -> Iterator[None]:
    """An ATT&CK mitigation labelled with T1218.011 (the corpus holds none)."""
    with database.connect(serving_db_url, autocommit=True) as owner:
        owner.execute(
            "INSERT INTO documents (doc_id, source, source_version, title, url, body, metadata, techniques,"
            " platforms, tags, content_hash, media_type) VALUES ('mitre_attack:M9999', 'mitre_attack', 'test',"
            " 'Test mitigation', NULL, 'mitigates', '{\"kind\": \"mitigation\"}', ARRAY['T1218.011'], '{}', '{}',"
            " 'mitre_attack:M9999', 'text/plain')"
        )
        yield
        owner.execute("DELETE FROM documents WHERE doc_id = 'mitre_attack:M9999'")


def test_attack_mitigations_count_as_countermeasures_and_its_techniques_do_not(
    client: TestClient, mitigation: None
) -> None:
    rundll32 = by_id(covered(client, techniques=["T1218.011"], top=10))["T1218.011"]
    # the technique's own ATT&CK document is labelled with it too; only the mitigation counts
    assert rundll32["countermeasures"]["by_source"].get("mitre_attack") == 1
    mitigation = {"doc_id": "mitre_attack:M9999", "title": "Test mitigation", "source": "mitre_attack"}
    assert mitigation in rundll32["countermeasures"]["top"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({}, "one of techniques, actor, tactic and technique_layer"),
        ({"techniques": ["T1003"], "actor": "G0007"}, "one of techniques, actor, tactic and technique_layer"),
        ({"techniques": []}, "techniques"),
        ({"techniques": ["T1003"] * 201}, "techniques"),
        ({"techniques": ["mimikatz"]}, "techniques"),
        ({"actor": "APT29"}, "actor"),
        ({"techniques": ["T1003"], "top": 11}, "top"),
        ({"techniques": ["T1003"], "limit": 0}, "limit"),
        ({"techniques": ["T1003"], "limit": 201}, "limit"),
        ({"techniques": ["T1003"], "cursor": "after T1003"}, "cursor"),
        ({"techniques": ["T1003"], "fold_subtechniques": "yes"}, "fold_subtechniques"),
        ({"tactic": "execution", "actor": "G0007"}, "one of techniques, actor, tactic and technique_layer"),
        ({"tactic": "execution", "platforms": ["amiga"]}, "unknown platforms"),
    ],
)
def test_limits_are_422_with_their_kind(client: TestClient, body: dict[str, Any], said: str) -> None:
    response = client.post("/v1/coverage", json=body)
    assert response.status_code == 422, response.text
    assert response.json()["kind"] == "validation" and said in response.text


def test_the_mcp_tool_answers_as_rest(client: TestClient) -> None:
    rest = covered(client, "alice-key", techniques=["T1003.001", "T1059.001"])
    tool = call(client, "coverage", "alice-key", techniques=["T1003.001", "T1059.001"])
    assert {k: v for k, v in tool.items() if k not in VOLATILE} == {k: v for k, v in rest.items() if k not in VOLATILE}
