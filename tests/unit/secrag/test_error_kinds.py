"""The public vocabulary of refresh failures: each exception has one kind, each kind one fixed message."""

from __future__ import annotations

import psycopg
import pytest

from secrag.error_kinds import KINDS, MESSAGES, kind_of, message
from secrag.errors import (
    ConfigError,
    DatabaseError,
    FetchError,
    FetchTimeout,
    FetchTooLarge,
    ParseError,
    PublishRefused,
)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (FetchError("git ls-remote file:///srv/mirror/x.git: fatal: not found"), "fetch_failed"),
        (FetchTimeout("https://api.github.com/repos/x: read timed out"), "upstream_timeout"),
        (FetchTooLarge("feed over 100 MiB"), "upstream_too_large"),
        (ParseError("/tmp/x/rules/a.yml: bad YAML", path="rules/a.yml"), "parse_failed"),
        (ParseError("nothing parsed from 3 files", empty=True), "empty"),
        (PublishRefused("shrank from 10 to 4 records", kind="shrank"), "shrank"),
        (PublishRefused("empty result: nothing to publish", kind="empty"), "empty"),
        (ConfigError("folders.yaml:3: folders[0].tenant: ..."), "config_error"),
        (DatabaseError("could not connect to /var/run/postgresql"), "database_error"),
        (psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"), "database_error"),
        (KeyError("/srv/secrag/work"), "internal_error"),
        (KeyboardInterrupt(), "interrupted"),
    ],
)
def test_every_failure_has_one_kind(error: BaseException, kind: str) -> None:
    assert kind_of(error) == kind


def test_a_probe_that_could_not_fetch_is_a_failed_probe() -> None:
    assert kind_of(FetchError("git ls-remote failed"), phase="probe") == "probe_failed"
    assert kind_of(FetchTimeout("slow"), phase="probe") == "upstream_timeout"


def test_each_kind_has_a_fixed_message_that_names_no_path_or_url() -> None:
    assert set(MESSAGES) == set(KINDS)
    for kind in KINDS:
        text = message(kind)
        assert text and text.endswith("stays served.") and "/" not in text.replace("/v1", "")
    assert message(None) is None
    assert message("not_a_kind") == MESSAGES["internal_error"]  # an unknown word reads as internal
