"""Property tests: arbitrary search bodies never cause a server error; the OpenAPI contract holds."""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

SOURCES = ["sigma", "mitre_attack", "lolbas", "nope", ""]
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=0, max_size=80)
QUERIES = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "T1003",
            "t1059.001",
            "CVE-2021-44228",
            "-lsass",
            '"quoted',
            "a | b",
            "!!!",
            "&",
            "or",
            "AML.T0051",
            "D3-AL",
            "mimikatz.exe",
            "' OR 1=1 --",
        ]
    ),
)
BODIES = st.fixed_dictionaries(
    {"query": QUERIES},
    optional={
        "k": st.integers(-2, 60),
        "offset": st.integers(-1, 1200),
        "mode": st.sampled_from(["hybrid", "fts", "vector", "fuzzy", "bogus"]),
        "strategy": st.sampled_from(["fuse", "fts_then_vec"]),
        "rrf_k0": st.integers(0, 100),
        "w_fts": st.floats(-1, 11, allow_nan=False),
        "min_score": st.one_of(st.none(), st.floats(-2, 2, allow_nan=False)),
        "group_by_doc": st.booleans(),
        "filters": st.fixed_dictionaries(
            {},
            optional={
                "sources": st.lists(st.sampled_from(SOURCES), max_size=3),
                "techniques": st.lists(st.sampled_from(["T1003", "T1059.001", "X1"]), max_size=2),
                "platforms": st.lists(TEXT, max_size=2),
                "tags_any": st.lists(TEXT, max_size=2),
                "doc_ids": st.lists(TEXT, max_size=3),
                "updated_after": st.sampled_from(["2020-01-01T00:00:00Z", "bad"]),
            },
        ),
        "return": st.fixed_dictionaries({}, optional={"text": st.booleans(), "max_text_chars": st.integers(0, 50)}),
    },
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(body=BODIES)
def test_search_never_fails_on_any_input(client: TestClient, body: dict[str, Any]) -> None:
    response = client.post("/v1/search", json=body)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 200:
        payload = response.json()
        k = body.get("k", 10)
        assert len(payload["results"]) <= k
        assert all("acme" not in r["source"] and "globex" not in r["source"] for r in payload["results"])


# Cases per operation and generation mode (a bounded budget; SECRAG_CONTRACT_EXAMPLES=200 for a deep run).
EXAMPLES = int(os.environ.get("SECRAG_CONTRACT_EXAMPLES", "8"))
CONTRACT_CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.content_type_conformance,
]


# A query parameter that is a list of strings cannot be sent "not as a list": a negative case that makes
# `columns` (or the lookup's `value`) a number or an object is serialised to `columns=0`, which is a valid
# one-item list, and the accepted request is reported as ST201 (seen once in CI when the example doc_id
# exists). Nothing is wrong with the API there; every other negative case still counts.
_QUERY_LISTS = ("parameter `columns` in query", "parameter `value` in query")


# Source names are the store's (and the caller's): no schema can list them, so a well-formed name the store
# does not hold is a documented 422 ("unknown source ..., valid sources: ...") that positive data may meet.
_STORE_NAMES = ("unknown source ",)


def _unrepresentable(exc: BaseException) -> bool:
    text = str(exc)
    alone = "found 1 distinct failure" in text and "Schema-violating request accepted" in text
    unknown_name = "Schema-valid request rejected" in text and any(p in text for p in _STORE_NAMES)
    return (alone and any(p in text for p in _QUERY_LISTS)) or unknown_name


@pytest.mark.parametrize("mode", list(schemathesis.GenerationMode), ids=lambda m: m.value)
def test_openapi_contract(client: TestClient, mode: Any) -> None:  # noqa: ANN401 - a GenerationMode
    """A bounded schemathesis run per operation, positive and negative data: no server error, no
    undocumented status, responses as declared, and schema-invalid requests refused."""
    schema = schemathesis.openapi.from_dict(client.get("/openapi.json").json())
    failures: list[str] = []
    checks = [*CONTRACT_CHECKS]
    if mode == schemathesis.GenerationMode.POSITIVE:
        checks.append(schemathesis.checks.positive_data_acceptance)
    if mode == schemathesis.GenerationMode.NEGATIVE:
        checks.append(schemathesis.checks.negative_data_rejection)
    for operation in schema.get_all_operations():
        op = operation.ok()
        op_checks = checks
        if op.definition.raw.get("operationId") == "get_upstream":
            # a 502 there is the upstream's failure (declared; the test upstream lacks most records)
            op_checks = [c for c in checks if c is not schemathesis.checks.not_a_server_error]

        @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy(generation_mode=mode))
        def check(case: Any) -> None:  # noqa: ANN401 - called at once, inside the loop
            kwargs = case.as_transport_kwargs(base_url="http://testserver")
            kwargs.pop("cookies", None)
            try:
                response = client.request(**kwargs)
            except Exception as exc:  # noqa: BLE001
                if type(exc).__name__ == "InvalidURL" and "too long" in str(exc):
                    return  # over the HTTP client's 64 KB URL (servers answer 414 well before): never sent
                raise
            try:
                case.validate_response(response, checks=op_checks)  # noqa: B023
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collected, reported together below
                if _unrepresentable(exc):
                    return
                failures.append(f"{op.label}: {response.status_code} {type(exc).__name__}: {str(exc)[:300]}")  # noqa: B023

        try:
            check()
        except Unsatisfiable:  # nothing to vary (an operation without parameters has no negative data)
            continue
    assert failures == [], "\n".join(failures[:20])
