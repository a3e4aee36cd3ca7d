"""One root exception for secrag and its specific subclasses."""

from __future__ import annotations

from typing import Literal


class SecragError(Exception):
    """Root of every error secrag raises on purpose; the CLI prints these as one line."""

    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint

    def one_line(self) -> str:
        text = str(self)
        return f"{text} (hint: {self.hint})" if self.hint else text


class ConfigError(SecragError):
    """Invalid or missing configuration."""


class DatabaseError(SecragError):
    """The database is unreachable, misconfigured or lacks a required extension."""


class EmbeddedServerError(DatabaseError):
    """The embedded PostgreSQL could not be started, stopped or inspected."""


class MigrationError(DatabaseError):
    """A migration failed, or an applied migration file was edited."""


class FetchError(SecragError):
    """An upstream could not be probed or downloaded."""


class FetchTooLarge(FetchError):
    """An upstream answer (or file) is over its size cap."""


class FetchTimeout(FetchError):
    """An upstream did not answer within its time budget."""


class ParseError(SecragError):
    """One upstream file could not be parsed; the run skips it and records why."""

    def __init__(self, reason: str, *, path: str = "", source: str = "", empty: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path
        self.source = source
        self.empty = empty  # the whole version held nothing to parse (not one bad file)


class PublishRefused(SecragError):
    """A source version was refused (empty, or shrank suspiciously); the old one stays served."""

    def __init__(self, message: str, *, kind: Literal["empty", "shrank", "config_error"]) -> None:
        super().__init__(message)
        self.kind: Literal["empty", "shrank", "config_error"] = kind


class PromotionRefused(SecragError):
    """A trained model was not promoted (or rolled back): unknown, not covering the chunks it would serve, or
    below its quality gate; the sentence path keeps the model it had."""


class FetchRateLimited(FetchError):
    """An upstream API refused a request because the caller's rate limit is used up, until `reset_at`."""

    def __init__(self, message: str, *, reset_at: float | None = None) -> None:
        super().__init__(message, hint="set GITHUB_TOKEN for a higher limit, or lengthen the poll intervals")
        self.reset_at = reset_at  # epoch seconds, when the upstream said


class SnapshotRefused(SecragError):
    """A store snapshot was not exported or imported: damaged, unsigned where a signature is required, of
    another schema or model, or a store it may not go into; the target store is unchanged."""
