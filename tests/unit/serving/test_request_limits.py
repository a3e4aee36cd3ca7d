"""Request limits: a value over the deployment's limit is a 422 naming the field and the setting."""

from __future__ import annotations

import pytest

from serving.access.request_limits import RequestLimits
from serving.contract.errors import InvalidField
from serving.contract.layer_models import LayerIn
from serving.contract.map_models import MapRequest
from serving.contract.requests import SearchRequest


def test_values_up_to_the_limits_pass_and_beyond_them_fail() -> None:
    limits = RequestLimits(max_k=5, max_candidates=100, max_query_chars=20)
    limits.check_search(SearchRequest(query="x" * 20, k=5, fts_k=100, vec_k=100, candidates_k=100, rerank_k=100))
    for field, request in (
        ("k", SearchRequest(query="x", k=6)),
        ("fts_k", SearchRequest(query="x", k=1, fts_k=101)),
        ("rerank_k", SearchRequest(query="x", k=1, rerank_k=101)),
        ("query", SearchRequest(query="x" * 21, k=1)),
    ):
        with pytest.raises(InvalidField) as raised:
            limits.check_search(request)
        assert raised.value.detail[0]["loc"] == ["body", field]


def test_the_limits_are_written_into_the_document() -> None:
    document = {
        "components": {
            "schemas": {
                "SearchRequest": {
                    "properties": {
                        "k": {"maximum": 1000},
                        "vec_k": {"anyOf": [{"type": "integer", "maximum": 10000}, {"type": "null"}]},
                        "query": {"maxLength": 65536},
                    }
                },
                "PlanRequest": {"properties": {"query": {"maxLength": 65536}}},
            }
        }
    }
    RequestLimits().state(document)
    schemas = document["components"]["schemas"]
    assert schemas["SearchRequest"]["properties"]["k"]["maximum"] == 50
    assert schemas["SearchRequest"]["properties"]["vec_k"]["anyOf"][0]["maximum"] == 1000
    assert schemas["PlanRequest"]["properties"]["query"]["maxLength"] == 8192


def test_a_map_over_its_limits_fails_naming_the_setting() -> None:
    limits = RequestLimits(max_map_chars=30, max_map_sentences=2, max_map_techniques=20)
    limits.check_map(MapRequest(text="x" * 30, limit=20))
    limits.check_sentences(2)
    for field, setting, check in (
        ("text", "SECRAG_MAP_MAX_CHARS", lambda: limits.check_map(MapRequest(text="x" * 31))),
        ("limit", "SECRAG_MAP_MAX_TECHNIQUES", lambda: limits.check_map(MapRequest(text="x", limit=21))),
        ("text", "SECRAG_MAP_MAX_SENTENCES", lambda: limits.check_sentences(3)),
    ):
        with pytest.raises(InvalidField) as raised:
            check()
        assert raised.value.detail[0]["loc"] == ["body", field] and setting in str(raised.value)
    document = {"components": {"schemas": {"MapRequest": {"properties": {"text": {}, "limit": {}}}}}}
    limits.state(document)
    assert document["components"]["schemas"]["MapRequest"]["properties"] == {
        "text": {"maxLength": 30},
        "limit": {"maximum": 20},
    }


def test_a_layer_over_its_entry_limit_fails_naming_the_setting_and_the_limit_is_stated() -> None:
    limits = RequestLimits(max_layer_techniques=2)
    entries = [{"techniqueID": "T1003"}, {"techniqueID": "T1059", "tactic": "execution"}]
    layer = {"name": "x", "domain": "enterprise-attack"}
    limits.check_layer("left", LayerIn.model_validate({**layer, "techniques": entries}))
    limits.check_layer("left", None)
    over = LayerIn.model_validate({**layer, "techniques": entries * 2})
    with pytest.raises(InvalidField) as raised:
        limits.check_layer("technique_layer", over)
    assert raised.value.detail[0]["loc"] == ["body", "technique_layer", "techniques"]
    assert "has 4 technique entries" in str(raised.value) and "SECRAG_LAYER_MAX_TECHNIQUES" in str(raised.value)
    document = {"components": {"schemas": {"LayerIn": {"properties": {"techniques": {"maxItems": 10000}}}}}}
    limits.state(document)
    assert document["components"]["schemas"]["LayerIn"]["properties"]["techniques"]["maxItems"] == 2
