"""Navigator layers in, over the serving corpus: POST /v1/layers/compare (and the MCP tool compare_layers),
coverage and map with a technique_layer, the limits, and the coverage_for_group prompt."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from serving.api.app import create_app
from serving.settings import ServingSettings
from tests.unit.serving.test_layer_reading import layer_file
from tests.unit.serving.test_map_layer import assert_valid_layer

from .test_map import REPORT
from .test_mcp import call, rpc

VOLATILE = ("took_ms",)


def posted(client: TestClient, path: str, body: dict[str, Any], status: int = 200) -> dict[str, Any]:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    return answer


def stable(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in VOLATILE}


def test_compare_minus_keeps_the_lefts_scores_and_reports_each_layer(client: TestClient) -> None:
    body = {"left": layer_file("apt28_4_4.json"), "right": layer_file("my_rules_4_5.json"), "operation": "minus"}
    answer = posted(client, "/v1/layers/compare", body)
    assert answer["techniques"] == ["T1003", "T1087.002", "T1218.011"]
    left, right = answer["left"], answer["right"]
    assert (left["format"], left["entries"], left["techniques"]) == ("4.4", 10, 6)
    assert (left["revoked"], left["deprecated"], left["unknown"], left["disabled"]) == (
        ["T1002"],
        ["T1064"],
        [],
        ["T1059.003"],
    )
    assert (right["format"], right["unknown"], right["disabled"]) == ("4.5", ["T9999"], ["T1218.011"])
    layer = answer["layer"]
    assert_valid_layer(layer)
    assert layer["name"] == "APT28 (G0007) minus SOC rules" and layer["domain"] == "enterprise-attack"
    entry = next(t for t in layer["techniques"] if t["techniqueID"] == "T1087.002")
    assert entry["score"] == 1 and entry["tactic"] == "discovery"
    assert entry["comment"].startswith("in APT28 (G0007) (score 1): ") and entry["comment"].endswith("not in SOC rules")


def test_compare_with_a_min_score_union_and_intersect(client: TestClient) -> None:
    base = {"left": layer_file("apt28_4_4.json"), "right": layer_file("my_rules_4_5.json")}
    undetected = posted(client, "/v1/layers/compare", {**base, "operation": "minus", "right_min_score": 1})
    assert undetected["techniques"] == ["T1003", "T1059.001", "T1087.002", "T1218.011"]
    assert undetected["right"]["below_min_score"] == ["T1059.001"]
    both = posted(client, "/v1/layers/compare", {**base, "operation": "intersect", "scores": "sum", "name": "both"})
    assert both["techniques"] == ["T1003.001", "T1055", "T1059.001"] and both["layer"]["name"] == "both"
    assert {t["techniqueID"]: t["score"] for t in both["layer"]["techniques"]}["T1003.001"] == 4
    either = posted(client, "/v1/layers/compare", {**base, "operation": "union", "scores": "max"})
    assert set(either["techniques"]) == {
        "T1003",
        "T1003.001",
        "T1055",
        "T1059.001",
        "T1087.002",
        "T1204.002",
        "T1218.011",
    }


def test_layers_of_two_domains_compare_in_the_lefts(client: TestClient) -> None:
    ics = {"name": "plant", "domain": "ics-attack", "techniques": [{"techniqueID": "T0800"}, {"techniqueID": "T1003"}]}
    body = {"left": layer_file("apt28_4_4.json"), "right": ics, "operation": "minus"}
    answer = posted(client, "/v1/layers/compare", body)
    assert answer["layer"]["domain"] == "enterprise-attack" and answer["right"]["domain"] == "ics-attack"
    assert "T1003" not in answer["techniques"] and "T1003.001" in answer["techniques"]


def test_an_actors_coverage_layer_minus_my_rules_is_one_call(client: TestClient) -> None:
    """The compare example of docs/reference/api.md: G0007's techniques none of my rules detect."""
    coverage = posted(client, "/v1/coverage", {"actor": "G0007", "analytics": False})
    group = {t["technique_id"] for t in coverage["techniques"]}
    answer = posted(
        client,
        "/v1/layers/compare",
        {
            "left": coverage["layer"],
            "right": layer_file("my_rules_4_5.json"),
            "operation": "minus",
            "right_min_score": 1,
        },
    )
    assert set(answer["techniques"]) == group - {"T1003.001", "T1055", "T1204.002"}
    assert answer["left"]["format"] == "4.5" and answer["left"]["unknown"] == []
    scores = {
        t["technique_id"]: sum(1 for k in ("detections", "tests", "countermeasures") if t[k]["count"])
        for t in coverage["techniques"]
    }
    assert all(t["score"] == scores[t["techniqueID"]] for t in answer["layer"]["techniques"])  # the left's scores


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"left": {**layer_file("apt28_4_4.json"), "versions": {"layer": "4.3"}}}, "layer format '4.3' is not read"),
        ({"operation": "xor"}, "operation"),
        ({"scores": "avg"}, "scores"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_what_cannot_be_compared_is_a_422_saying_why(client: TestClient, change: dict[str, Any], said: str) -> None:
    body = {"left": layer_file("apt28_4_4.json"), "right": layer_file("my_rules_4_5.json"), "operation": "minus"}
    response = client.post("/v1/layers/compare", json={**body, **change})
    assert response.status_code == 422 and said in response.text, response.text


@pytest.fixture(scope="module")
def small_layers(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    with TestClient(create_app(settings_for(serving_db_url, layer_max_techniques=100))) as c:
        yield c


def test_a_layer_over_the_entry_limit_is_a_422_everywhere_and_the_limit_is_stated(small_layers: TestClient) -> None:
    big = {**layer_file("my_rules_4_5.json"), "techniques": [{"techniqueID": f"T{1000 + i}"} for i in range(101)]}
    for path, body, field in (
        ("/v1/layers/compare", {"left": big, "right": big, "operation": "union"}, "left"),
        ("/v1/coverage", {"technique_layer": big}, "technique_layer"),
        ("/v1/map", {"text": REPORT, "technique_layer": big}, "technique_layer"),
    ):
        response = small_layers.post(path, json=body)
        assert response.status_code == 422, response.text
        assert response.json()["kind"] == "invalid_field" and "SECRAG_LAYER_MAX_TECHNIQUES" in response.text
        assert response.json()["detail"][0]["loc"] == ["body", field, "techniques"]
    schema = small_layers.get("/openapi.json").json()["components"]["schemas"]["LayerIn"]
    assert schema["properties"]["techniques"]["maxItems"] == 100
    tool = next(t for t in rpc(small_layers, "tools/list", {})["result"]["tools"] if t["name"] == "compare_layers")
    assert tool["inputSchema"]["$defs"]["LayerIn"]["properties"]["techniques"]["maxItems"] == 100


def test_coverage_of_a_layer_is_the_coverage_of_its_kept_techniques(client: TestClient) -> None:
    answer = posted(client, "/v1/coverage", {"technique_layer": layer_file("apt28_4_4.json"), "analytics": False})
    kept = ["T1003", "T1003.001", "T1055", "T1059.001", "T1087.002", "T1218.011"]
    same = posted(client, "/v1/coverage", {"techniques": kept, "analytics": False})
    assert [t["technique_id"] for t in answer["techniques"]] == kept
    assert answer["techniques"] == same["techniques"] and answer["gaps"] == same["gaps"]
    report = answer["technique_layer"]
    assert (report["name"], report["revoked"], report["deprecated"], report["disabled"]) == (
        "APT28 (G0007)",
        ["T1002"],
        ["T1064"],
        ["T1059.003"],
    )
    assert answer["layer"]["name"] == "secrag coverage of APT28 (G0007)"
    assert_valid_layer(answer["layer"])
    assert same["technique_layer"] is None


def test_coverage_of_a_layer_of_nothing_known_is_a_404_saying_what_was_left_out(client: TestClient) -> None:
    layer = {
        "name": "old",
        "domain": "enterprise-attack",
        "techniques": [{"techniqueID": "T1002"}, {"techniqueID": "T9999"}],
    }
    response = client.post("/v1/coverage", json={"technique_layer": layer})
    assert response.status_code == 404 and "1 unknown, 1 revoked" in response.text, response.text
    both = client.post("/v1/coverage", json={"technique_layer": layer, "techniques": ["T1003"]})
    assert both.status_code == 422 and "technique_layer" in both.text


def test_coverage_and_map_read_a_layer_in_its_domain_unless_asked_another(client: TestClient) -> None:
    mobile = {"name": "phones", "domain": "mobile-attack", "techniques": [{"techniqueID": "T1003"}]}
    answer = posted(client, "/v1/coverage", {"technique_layer": mobile, "analytics": False})
    assert answer["layer"]["domain"] == "mobile-attack" and answer["technique_layer"]["domain"] == "mobile-attack"
    asked = posted(client, "/v1/coverage", {"technique_layer": mobile, "domain": "enterprise", "analytics": False})
    assert asked["layer"]["domain"] == "enterprise-attack" and asked["techniques"][0]["domain"] == "enterprise"
    # The corpus holds no Mobile techniques: a map in the layer's domain says so, in Enterprise's it runs.
    missing = client.post("/v1/map", json={"text": REPORT, "technique_layer": mobile})
    assert missing.status_code == 404 and "no ATT&CK mobile techniques" in missing.text, missing.text
    within = posted(client, "/v1/map", {"text": REPORT, "technique_layer": mobile, "domain": "enterprise"})
    assert {t["technique_id"] for t in within["techniques"]} <= {"T1003"}


def test_a_map_within_a_layer_keeps_only_the_layers_techniques_as_scored_without_it(client: TestClient) -> None:
    everything = posted(client, "/v1/map", {"text": REPORT, "min_score": 0, "limit": 100})
    found = [t["technique_id"] for t in everything["techniques"]]
    assert len(found) > 2
    keep = found[1::2]  # every other one: the best is left out
    layer = {"name": "scope", "domain": "enterprise-attack", "techniques": [{"techniqueID": t} for t in keep]}
    within = posted(client, "/v1/map", {"text": REPORT, "min_score": 0, "limit": 100, "technique_layer": layer})
    assert [t["technique_id"] for t in within["techniques"]] == keep

    def scored(techniques: list[dict[str, Any]]) -> list[tuple[str, float, Any]]:
        return [(t["technique_id"], t["score"], t["sentences"]) for t in techniques if t["technique_id"] in keep]

    assert scored(within["techniques"]) == scored(everything["techniques"])  # citations are numbered anew
    assert within["technique_layer"]["techniques"] == len(keep) and everything["technique_layer"] is None


def test_the_mcp_tool_answers_as_rest(client: TestClient) -> None:
    body = {"left": layer_file("apt28_4_4.json"), "right": layer_file("my_rules_4_5.json"), "operation": "union"}
    assert stable(call(client, "compare_layers", **body)) == stable(posted(client, "/v1/layers/compare", body))


def test_the_coverage_for_group_prompt_works_through_the_layers(client: TestClient) -> None:
    def prompt(**arguments: str) -> str:
        answer = rpc(client, "prompts/get", {"name": "coverage_for_group", "arguments": arguments})
        text: str = answer["result"]["messages"][0]["content"]["text"]
        return text

    plain = prompt(group="APT28")
    assert "layer=true" in plain and "`compare_layers`" in plain and "My rules' layer" not in plain
    mine = prompt(group="G0007", my_layer='{"name": "SOC rules", "domain": "enterprise-attack"}')
    assert "operation=minus" in mine and 'My rules\' layer:\n<<<\n{"name": "SOC rules"' in mine
