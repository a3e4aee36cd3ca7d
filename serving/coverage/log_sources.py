"""ATT&CK's log sources (an analytic's name and channel) -> the Sigma logsources, Elastic index patterns, Splunk data
sources, ECS event categories and telemetry schemas that name the same events (serving/coverage/log_sources.yaml)."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from pydantic import Field, PrivateAttr, field_validator

from secrag.files.config_files import ConfigModel, FieldError, load_model
from secrag.files.package_data import package_path
from secrag.telemetry_refs import LOGSOURCE_KEYS, LogsourceKey, schema_ids

EVENT_CODES = re.compile(r"^\s*(?:EventCode|EventID|Event ID)\s*=", re.IGNORECASE)
CODE = "{code}"
H = TypeVar("H", bound=Hashable)

SigmaLogsource = tuple[tuple[str, str], ...]  # (key, value) pairs in LOGSOURCE_KEYS order


def default_log_sources_file() -> Path:
    return package_path("serving.coverage", "log_sources.yaml")


class Targets(ConfigModel):
    """What the store's rule sets and schemas call some events."""

    sigma: list[dict[LogsourceKey, str]] = Field(default_factory=list)
    elastic: list[str] = Field(default_factory=list)
    splunk: list[str] = Field(default_factory=list)
    event_categories: list[str] = Field(default_factory=list)
    schemas: list[str] = Field(default_factory=list)

    @field_validator("schemas")
    @classmethod
    def _schema_ids(cls, schemas: list[str]) -> list[str]:
        return schema_ids(schemas)

    @field_validator("sigma")
    @classmethod
    def _logsources(cls, sigma: list[dict[str, str]]) -> list[dict[str, str]]:
        for i, logsource in enumerate(sigma):
            if not logsource:
                raise FieldError((i,), "a Sigma logsource names at least one of product, category and service")
        return sigma


class ChannelTargets(Targets):
    """Targets added when a regular expression is found in the channel (any case)."""

    match: str

    @field_validator("match")
    @classmethod
    def _regex(cls, match: str) -> str:
        try:
            re.compile(match)
        except re.error as exc:
            raise FieldError((), f"not a regular expression: {exc}") from exc
        return match


class LogSourceEntry(Targets):
    """One ATT&CK log-source name (and its other spellings): its own targets and those of its channels."""

    name: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    each_event: Targets | None = None  # {code} in a value is each event code of the channel
    each_event_codes: list[int] | None = Field(default=None, min_length=2, max_length=2)  # lowest, highest
    events: dict[int, Targets] = Field(default_factory=dict)
    channels: list[ChannelTargets] = Field(default_factory=list)


@dataclass(frozen=True)
class Resolution:
    """What one ATT&CK log source (name and channel) corresponds to; empty when the table does not know it."""

    sigma: tuple[SigmaLogsource, ...] = ()
    elastic: tuple[str, ...] = ()
    splunk: tuple[str, ...] = ()
    event_categories: tuple[str, ...] = ()
    schemas: tuple[str, ...] = ()

    @property
    def resolved(self) -> bool:
        return bool(self.sigma or self.elastic or self.splunk or self.event_categories or self.schemas)


class LogSourceTable(ConfigModel):
    """Every ATT&CK log-source name the table knows, in file order."""

    log_sources: list[LogSourceEntry]
    _by_name: dict[str, LogSourceEntry] = PrivateAttr(default_factory=dict)

    @field_validator("log_sources")
    @classmethod
    def _unique(cls, entries: list[LogSourceEntry]) -> list[LogSourceEntry]:
        seen: set[str] = set()
        for i, entry in enumerate(entries):
            for name in (entry.name, *entry.aliases):
                if name.casefold() in seen:
                    raise FieldError((i, "name"), f"{name!r} is named twice")
                seen.add(name.casefold())
        return entries

    def model_post_init(self, context: object, /) -> None:
        for entry in self.log_sources:
            for name in (entry.name, *entry.aliases):
                self._by_name[name.casefold()] = entry

    def resolve(self, name: str, channel: str | None) -> Resolution:
        """The targets of a log source: its name's own, each of its event codes', and its matching channels'."""
        entry = self._by_name.get(name.strip().casefold())
        if entry is None:
            return Resolution()
        parts: list[Targets] = [entry]
        text = channel or ""
        codes = event_codes(text)
        if entry.each_event is not None:
            low, high = entry.each_event_codes or (0, 1 << 31)  # the codes each_event applies to
            parts.extend(_fill(entry.each_event, code) for code in codes if low <= code <= high)
        parts.extend(entry.events[code] for code in codes if code in entry.events)
        parts.extend(c for c in entry.channels if re.search(c.match, text, re.IGNORECASE))
        return Resolution(
            sigma=_unique(sigma_key(s) for p in parts for s in p.sigma),
            elastic=_unique(e.lower() for p in parts for e in p.elastic),
            splunk=_unique(s for p in parts for s in p.splunk),
            event_categories=_unique(c for p in parts for c in p.event_categories),
            schemas=_unique(s for p in parts for s in p.schemas),
        )


def event_codes(channel: str) -> list[int]:
    """The event codes of an `EventCode=4663, 4670` channel (`EventCode=4778, EventCode=4779` too); else none."""
    if not EVENT_CODES.match(channel):
        return []
    return list(dict.fromkeys(int(code) for code in re.findall(r"\d+", channel)))


def sigma_key(logsource: dict[LogsourceKey, str]) -> SigmaLogsource:
    """A logsource's keys in product, category, service order, values in lower case."""
    return tuple((k, logsource[k].strip().lower()) for k in LOGSOURCE_KEYS if logsource.get(k))


def _fill(targets: Targets, code: int) -> Targets:
    def fill(values: list[str]) -> list[str]:
        return [v.replace(CODE, str(code)) for v in values]

    return targets.model_copy(
        update={"elastic": fill(targets.elastic), "splunk": fill(targets.splunk), "schemas": fill(targets.schemas)}
    )


def _unique(values: Iterable[H]) -> tuple[H, ...]:
    return tuple(dict.fromkeys(values))


@lru_cache(maxsize=1)
def shipped_log_sources() -> LogSourceTable:
    """The shipped table, read once per process (create_app reads it first, so a bad file stops the start)."""
    return load_log_sources()


def load_log_sources(path: Path | None = None) -> LogSourceTable:
    """The mapping file (default: the one shipped), validated; errors name the file, line and field."""
    return load_model(path or default_log_sources_file(), LogSourceTable)
