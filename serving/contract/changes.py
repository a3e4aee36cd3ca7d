"""The change feed's request and response (GET /v1/changes, MCP `changes`): what each publish added, modified and
removed, newest first."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field

from serving.contract.requests import NO_NUL, SInt, SourceName, Strict

MAX_CHANGES = 1000  # entries per page
MAX_CURSOR = 2**63 - 1  # change ids are PostgreSQL bigints: a larger cursor overflowed (SQLSTATE 22003, a 500)


def decimal_pattern(maximum: int) -> str:
    """The pattern of the decimal numbers from 1 to `maximum` (no sign, no leading zero): those of fewer digits,
    then of as many, by the first digit where one is under the maximum's."""
    digits = str(maximum)
    shorter = [f"[1-9][0-9]{{0,{len(digits) - 2}}}"] if len(digits) > 1 else []
    lower = []
    for i, digit in enumerate(digits):
        least = 0 if i else 1
        if int(digit) > least:
            below = f"[{least}-{int(digit) - 1}]" if int(digit) - 1 > least else str(least)
            rest = len(digits) - i - 1
            lower.append(digits[:i] + below + (f"[0-9]{{{rest}}}" if rest else ""))
    return "^(?:" + "|".join([*shorter, *lower, digits]) + ")$"


CURSOR_PATTERN = decimal_pattern(MAX_CURSOR)
_CURSOR = re.compile(CURSOR_PATTERN)


def check_cursor(value: str) -> str:
    """A cursor CURSOR_PATTERN takes (the schema states the pattern; this says it in words)."""
    if not _CURSOR.fullmatch(value):
        raise ValueError(f"cursor must be a next_cursor: a number from 1 to {MAX_CURSOR}")
    return value


class ChangesQuery(Strict):
    """Which changes, from when, and which page."""

    sources: list[SourceName] | None = Field(
        default=None,
        max_length=64,
        description="Only these sources (names in any case, as /v1/sources lists them; a comma-separated list "
        "works too); default: every source the caller may see. An unknown name is a 422.",
    )
    since: Annotated[str, Field(min_length=1, max_length=200, pattern=NO_NUL)] | None = Field(
        default=None,
        description="Changes after this: an ISO 8601 time (`2026-11-20T08:00:00Z`; without an offset, UTC), or a "
        "source version (a commit SHA, release tag or feed version): the changes published after it.",
    )
    limit: SInt = Field(default=100, ge=1, le=MAX_CHANGES, description="Entries per page.")
    cursor: (
        Annotated[str, Field(json_schema_extra={"pattern": CURSOR_PATTERN}), AfterValidator(check_cursor)] | None
    ) = Field(
        default=None,
        description="The `next_cursor` of the previous page, for the next (older) one: a number from 1 to "
        f"{MAX_CURSOR}.",
    )


class DocumentChange(BaseModel):
    doc_id: str
    source: str
    title: str = Field(description="The document's title (a removed document's last one).")
    change: Literal["added", "modified", "removed"] = Field(
        description="`modified`: its content changed (not a document only chunked anew, nor one whose only "
        "change is a URL pinned to the new upstream version)."
    )
    old_version: str | None = Field(description="The upstream version the publish replaced (none for the first).")
    new_version: str = Field(description="The upstream version published.")
    changed_at: datetime = Field(description="When it was published.")


class ChangesResponse(BaseModel):
    changes: list[DocumentChange] = Field(
        description="Newest first; only documents the caller may see (so a page may hold fewer than `limit`)."
    )
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; none after the last one.")
