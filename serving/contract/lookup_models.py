"""The artefact lookup's request and response (GET /v1/lookup, MCP `lookup`): per looked-up hash, file name or
path, the records holding it and the fields it is in."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field

from secrag.artefacts import MAX_VALUE_CHARS, Kind
from serving.contract.requests import QUERY_PATTERN, SInt, Strict

MAX_LOOKUP_VALUES = 100  # values per request
MAX_LOOKUP_RECORDS = 100  # records per value
DEFAULT_LOOKUP_RECORDS = 20

LookupValue = Annotated[str, Field(min_length=1, max_length=MAX_VALUE_CHARS, pattern=QUERY_PATTERN)]


class LookupQuery(Strict):
    """Which values, and how many records of each."""

    value: list[LookupValue] = Field(
        min_length=1,
        max_length=MAX_LOOKUP_VALUES,
        description=f"Hashes (MD5, SHA-1, SHA-256, authenticode), file names or Windows paths, 1 to "
        f"{MAX_LOOKUP_VALUES} (repeat the parameter: `value=a&value=b`). Hashes and Windows names and paths match "
        "in any case, Unix names (GTFOBins) exactly; a path matches the paths the sources write in any of their "
        "forms (C:\\Windows\\System32, %SYSTEM32%, ...) and by its file name.",
    )
    limit: SInt = Field(
        default=DEFAULT_LOOKUP_RECORDS,
        ge=1,
        le=MAX_LOOKUP_RECORDS,
        description="Records per value, at most; `truncated` says when a value held more.",
    )


class ArtefactMatch(BaseModel):
    kind: Kind = Field(
        description="What the value is in the record: md5, sha1, sha256 (a file hash), authentihash (an "
        "authenticode hash), imphash, rich_header_hash, file_name or path."
    )
    field: str = Field(description="The upstream field holding it, e.g. KnownVulnerableSamples.SHA256, Full_Path.Path.")
    value: str = Field(description="The value as the record writes it.")


class LookupRecord(BaseModel):
    doc_id: str
    source: str
    title: str
    url: str | None
    matches: list[ArtefactMatch] = Field(description="Every field of the record holding the value.")


class ValueLookup(BaseModel):
    value: str = Field(description="The looked-up value, as given.")
    records: list[LookupRecord] = Field(
        description="The records the caller may see that hold the value: those it names (their title) first, then "
        "by source and title; empty for a value no record holds."
    )
    truncated: bool = Field(description="More records hold the value than `limit`.")


class LookupResponse(BaseModel):
    results: list[ValueLookup] = Field(description="One per distinct value, in the order given.")
    took_ms: float
