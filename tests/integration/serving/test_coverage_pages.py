"""A coverage answer is bounded and says so, over REST and MCP: `limit` techniques a page in technique order, the
cursor after the last, fewer techniques when they would pass a share of SECRAG_MAX_ANSWER_BYTES, a
`technique_layer` paged like any input, and an MCP answer cut to its budget (SECRAG_MCP_MAX_CHARS by default)
resuming after the last technique it kept."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.contract.coverage_models import CoverageResponse
from serving.coverage.paging import joined, technique_order
from serving.settings import ServingSettings

from .test_coverage import VOLATILE, covered, every_page, every_technique
from .test_mcp import call, rpc

GROUP = "G0007"
SMALL_BOUND = 64 * 1024  # SECRAG_MAX_ANSWER_BYTES' least value


@pytest.fixture(scope="module")
def bounded(serving_db_url: str, settings_for: Callable[..., ServingSettings]) -> Iterator[TestClient]:
    """The API with the least answer bound and a small default MCP budget."""
    settings = settings_for(serving_db_url, max_answer_bytes=SMALL_BOUND, mcp_max_chars=3000)
    with TestClient(create_app(settings)) as client:
        yield client


def test_a_group_comes_a_page_at_a_time_and_each_page_says_so(client: TestClient) -> None:
    pages = every_page(client, actor=GROUP, limit=7)
    ids = every_technique(pages)
    assert len(pages) > 2 and ids == sorted(set(ids), key=technique_order)  # in order, none twice
    assert {p["total"] for p in pages} == {len(ids)}
    for page in pages[:-1]:
        assert len(page["techniques"]) == 7 and page["truncated"]
        assert page["next_cursor"] == page["techniques"][-1]["technique_id"]
    assert 0 < len(pages[-1]["techniques"]) <= 7 and pages[-1]["next_cursor"] is None
    for page in pages:  # the layer and the gaps are the page's
        listed = {t["technique_id"] for t in page["techniques"]}
        assert {t["techniqueID"] for t in page["layer"]["techniques"]} == listed
        assert set(page["gaps"]["no_detection"]) <= listed
    whole = covered(client, actor=GROUP, limit=200)
    assert [t["technique_id"] for t in whole["techniques"]] == ids and whole["next_cursor"] is None


def test_an_answer_stops_before_the_answer_bound_and_pages_on(bounded: TestClient, client: TestClient) -> None:
    body = {"actor": GROUP, "top": 10, "limit": 200}
    assert len(client.post("/v1/coverage", json=body).content) > SMALL_BOUND // 4  # over the techniques' share
    response = bounded.post("/v1/coverage", json=body)
    assert response.status_code == 200 and len(response.content) <= SMALL_BOUND
    first = response.json()
    assert first["truncated"] and len(first["techniques"]) < first["total"]
    assert first["next_cursor"] == first["techniques"][-1]["technique_id"]
    pages = every_page(bounded, **body)
    assert every_technique(pages) == every_technique(every_page(client, **body))


def test_a_technique_layer_pages_like_any_input(client: TestClient, serving_db_url: str) -> None:
    with database.connect(serving_db_url, autocommit=True) as conn:
        known = [r[0] for r in conn.execute("SELECT id FROM mitre_techniques WHERE NOT revoked AND NOT deprecated")]
    layer = {
        "name": "every technique",
        "domain": "enterprise-attack",
        "versions": {"layer": "4.5", "navigator": "5.1.0"},
        "techniques": [{"techniqueID": t} for t in known],
    }
    pages = every_page(client, technique_layer=layer, limit=10)
    assert len(pages) > 1 and all(len(p["techniques"]) <= 10 for p in pages)
    assert sorted(every_technique(pages), key=technique_order) == every_technique(pages)
    assert set(every_technique(pages)) == set(known) and pages[0]["total"] == len(known)
    assert all(p["technique_layer"]["name"] == "every technique" for p in pages)


def test_the_mcp_tool_pages_as_rest(client: TestClient) -> None:
    rest = covered(client, actor=GROUP, limit=7, cursor="T1003")
    tool = call(client, "coverage", actor=GROUP, limit=7, cursor="T1003")
    assert {k: v for k, v in tool.items() if k not in VOLATILE} == {k: v for k, v in rest.items() if k not in VOLATILE}


def test_an_mcp_answer_cut_to_its_budget_resumes_after_the_last_technique_kept(client: TestClient) -> None:
    order = every_technique(every_page(client, actor=GROUP, limit=200))
    cut = call(client, "coverage", actor=GROUP, limit=50, max_chars=2000)
    kept = [t["technique_id"] for t in cut["techniques"]]
    assert kept == order[: len(kept)] and 0 < len(kept) < 50
    assert cut["budget"]["dropped"]["techniques"] == 50 - len(kept)
    assert cut["truncated"] and cut["next_cursor"] == kept[-1]
    after = call(client, "coverage", actor=GROUP, limit=5, cursor=cut["next_cursor"])
    assert [t["technique_id"] for t in after["techniques"]] == order[len(kept) : len(kept) + 5]


def test_an_mcp_answer_gets_the_default_budget_within_the_answer_bound(bounded: TestClient) -> None:
    result = rpc(bounded, "tools/call", {"name": "coverage", "arguments": {"actor": GROUP, "top": 10}})["result"]
    text = result["content"][0]["text"]
    assert len(text) <= 3000 and json.loads(text)["budget"]["max_chars"] == 3000  # SECRAG_MCP_MAX_CHARS
    asked = {"actor": GROUP, "top": 10, "limit": 200, "analytics": True, "max_chars": 1_000_000}
    result = rpc(bounded, "tools/call", {"name": "coverage", "arguments": asked})["result"]
    text = result["content"][0]["text"]
    quarter = SMALL_BOUND // 4  # at most four bytes a character: within the bound whatever the text
    assert len(text) <= quarter and json.loads(text)["budget"]["max_chars"] == quarter
    assert len(text.encode()) <= SMALL_BOUND


def test_pages_joined_are_the_answer_of_one_page(client: TestClient) -> None:
    """`secrag coverage` joins the pages of a layer it reads (serving/coverage/paging.py `joined`)."""
    pages = [CoverageResponse.model_validate(p) for p in every_page(client, actor=GROUP, limit=7, analytics=True)]
    one = CoverageResponse.model_validate(covered(client, actor=GROUP, limit=200, analytics=True))
    together = joined(pages).model_dump(mode="json", exclude={"took_ms"})
    alone = one.model_dump(mode="json", exclude={"took_ms"})
    assert together["techniques"] == alone["techniques"] and together["gaps"] == alone["gaps"]
    assert together["layer"] == alone["layer"] and together["next_cursor"] is None
    assert {(s["name"], s["channel"], s["analytics"]) for s in together["log_sources"]} == {
        (s["name"], s["channel"], s["analytics"]) for s in alone["log_sources"]
    }
