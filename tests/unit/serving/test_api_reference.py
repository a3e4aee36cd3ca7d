"""docs/reference/api.md is what serving/api/reference.py generates from the code: every operation and tool, each
example, every error kind as public_error answers it."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner
from fastapi.exceptions import RequestValidationError
from psycopg_pool import PoolTimeout
from starlette.exceptions import HTTPException

from secrag.settings import REPO_ROOT
from secrag_cli.main import cli
from secrag_cli.reference_docs import REFERENCE_FILE
from serving.api.app import create_app
from serving.api.reference import OTHER_KINDS, DefaultSettings, error_kinds, reference_text
from serving.api.reference_mcp import model_of
from serving.api.reference_schema import REF, type_text
from serving.contract.errors import UnknownApiKey, public_error


@pytest.fixture(scope="module")
def page() -> str:
    return reference_text()


def test_the_checked_in_reference_is_the_generated_one() -> None:
    result = CliRunner().invoke(cli, ["reference", "--check", "--file", str(REPO_ROOT / REFERENCE_FILE)])
    assert result.exit_code == 0, result.output  # the message names `secrag reference --write`


def test_every_operation_and_its_example_is_on_the_page(page: str) -> None:
    document = create_app(DefaultSettings(mcp_enabled=False)).openapi()
    for path, item in document["paths"].items():
        for method in item:
            section = page.split(f"### `{method.upper()} {path}`\n", 1)
            assert len(section) == 2, f"{method} {path}"
            assert f"```http\n{method.upper()} " in section[1].split("\n### ", 1)[0], f"{method} {path}: no example"


def test_every_tool_with_an_operation_has_an_example_call(page: str) -> None:
    mcp = page.split("\n## MCP\n", 1)[1].split("\n## Error kinds\n", 1)[0]
    tools = [tool.split("\n### ", 1)[0] for tool in mcp.split("\n### `")[1:]]
    assert {"search", "map", "coverage", "lookup", "get_document", "stats"} <= {t.split("`", 1)[0] for t in tools}
    for tool in tools:
        if "(GET /v1/" in tool or "(POST /v1/" in tool:
            assert '"method": "tools/call"' in tool, tool.split("`", 1)[0]


def test_the_page_does_not_read_the_environment(monkeypatch: pytest.MonkeyPatch, page: str) -> None:
    monkeypatch.setenv("SECRAG_MAX_K", "7")
    assert reference_text() == page


@pytest.mark.parametrize(
    "failure",
    [
        RequestValidationError([]),
        UnknownApiKey(),
        psycopg.errors.QueryCanceled(),
        PoolTimeout(),
        psycopg.Error(),
        HTTPException(405),
        HTTPException(413),
        HTTPException(415),
        HTTPException(400),
        RuntimeError(),
    ],
)
def test_each_listed_kind_is_public_errors(failure: Exception) -> None:
    """The kinds the page states beside the ApiError classes are those public_error gives."""
    error = public_error(failure)
    assert (error.status, error.kind) in {(status, kind) for status, kind, _ in OTHER_KINDS}


def test_every_kind_has_a_meaning() -> None:
    assert all(meaning for _, _, meaning in error_kinds())
    kinds = [kind for _, kind, _ in error_kinds()]
    assert len(kinds) == len(set(kinds))


def test_types_read_as_words() -> None:
    assert type_text({"anyOf": [{"$ref": f"{REF}LayerIn"}, {"type": "null"}]}) == "[`LayerIn`](#layerin) or null"
    assert type_text({"type": "array", "items": {"type": "string", "maxLength": 64}}) == "array of string (length ≤ 64)"
    assert type_text({"type": "integer", "minimum": 1.0, "maximum": 50}) == "integer (≥ 1, ≤ 50)"
    assert type_text({"enum": ["fts", "vector"]}) == 'one of `"fts"`, `"vector"`'
    assert type_text({"type": "object", "additionalProperties": {"type": "integer"}}) == "object of integer"


def test_a_tool_taking_a_models_fields_links_to_it() -> None:
    models = {"SearchRequest": {"properties": {"query": {}, "k": {}, "mode": {}}}, "Other": {"properties": {"x": {}}}}
    assert model_of({"query": {}, "k": {}, "mode": {}}, models) == ("SearchRequest", [])
    assert model_of({"query": {}, "k": {}}, models) == ("SearchRequest", ["mode"])
    assert model_of({"value": {}}, models) is None
