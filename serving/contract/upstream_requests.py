"""Pydantic models of the requests for documents' upstream forms (GET /v1/docs/{doc_id}/upstream, POST
/v1/docs/upstream, the MCP tool get_upstream)."""

from __future__ import annotations

from pydantic import Field

from serving.contract.requests import MAX_COLUMNS, MAX_IDS, Column, Ids, SBool, Strict, Text


class UpstreamOptions(Strict):
    """How upstream forms are given: which keys, and whether read live."""

    columns: list[Column] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_COLUMNS,
        description="Keep only these top-level keys of each structured record (JSON, YAML, TOML), and no text.",
    )
    live: SBool = Field(
        default=False,
        description="Read each record from the upstream at its published version instead of the stored form "
        "(a batch reads the first SECRAG_MAX_LIVE_REFETCH ids live; each id beyond is an error of its own).",
    )


class UpstreamQuery(UpstreamOptions):
    """One document's upstream form (GET /v1/docs/{doc_id}/upstream, as the MCP tool get_upstream)."""

    doc_id: Text = Field(min_length=1)


class UpstreamRequest(UpstreamOptions):
    """Several documents' upstream forms (POST /v1/docs/upstream)."""

    doc_ids: Ids = Field(
        min_length=1,
        max_length=MAX_IDS,
        description="Document ids; unknown or invisible ones are listed in `missing`.",
    )
