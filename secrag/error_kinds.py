"""The public vocabulary of refresh failures: a stable kind per way an attempt can fail, and its one message.

Callers of the API and MCP tools see only these (a kind and its fixed message); the full error text,
which may hold URLs, local paths, git's stderr or driver messages, stays in the Dagster event log, the
run's metadata and `source_versions.error_detail`, which only the store's owner can read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

import psycopg

from secrag.errors import (
    ConfigError,
    DatabaseError,
    FetchError,
    FetchTimeout,
    FetchTooLarge,
    ParseError,
    PublishRefused,
)

ErrorKind = Literal[
    "probe_failed",
    "fetch_failed",
    "upstream_timeout",
    "upstream_too_large",
    "parse_failed",
    "empty",
    "shrank",
    "config_error",
    "database_error",
    "abandoned",
    "interrupted",
    "internal_error",
]
KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)

_STAYS = " The previously published version stays served."
MESSAGES: Mapping[ErrorKind, str] = {
    "probe_failed": "The upstream could not be checked for a new version." + _STAYS,
    "fetch_failed": "The upstream version could not be downloaded." + _STAYS,
    "upstream_timeout": "The upstream did not answer in time." + _STAYS,
    "upstream_too_large": "The upstream answer was over its size limit." + _STAYS,
    "parse_failed": "The upstream version could not be parsed." + _STAYS,
    "empty": "The upstream version held nothing to publish." + _STAYS,
    "shrank": "The new version would remove more records than the shrink limit allows." + _STAYS,
    "config_error": "The source's configuration is invalid; an operator must correct it." + _STAYS,
    "database_error": "The store could not be written." + _STAYS,
    "abandoned": "The process running the attempt ended before it finished." + _STAYS,
    "interrupted": "The attempt was stopped before it finished." + _STAYS,
    "internal_error": "The attempt failed unexpectedly; the operators' logs have the details." + _STAYS,
}


def kind_of(error: BaseException, phase: str | None = None) -> ErrorKind:
    """The public kind of a failure, from its exception and the phase it happened in (a fetch error while
    probing says no more than that the probe failed)."""
    if isinstance(error, PublishRefused):
        return error.kind
    if isinstance(error, FetchTimeout):
        return "upstream_timeout"
    if isinstance(error, FetchTooLarge):
        return "upstream_too_large"
    if isinstance(error, FetchError):
        return "probe_failed" if phase == "probe" else "fetch_failed"
    if isinstance(error, ParseError):
        return "empty" if error.empty else "parse_failed"
    if isinstance(error, ConfigError):
        return "config_error"
    if isinstance(error, DatabaseError | psycopg.Error):
        return "database_error"
    if not isinstance(error, Exception):  # KeyboardInterrupt, a Dagster run termination, SystemExit
        return "interrupted"
    return "internal_error"


def message(kind: str | None) -> str | None:
    """The fixed message of a kind (a kind not in the vocabulary reads as an internal error)."""
    if kind is None:
        return None
    return MESSAGES[kind] if kind in KINDS else MESSAGES["internal_error"]
