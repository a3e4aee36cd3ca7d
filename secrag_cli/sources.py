"""`secrag sources ...`: the source registry and upstream version checks."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import click
import psycopg

from pipeline.sources.configure import upstream_for
from pipeline.sources.interface import UpstreamVersion
from pipeline.sources.registry import SourceSpec, default_registry
from secrag.db import database, embedded
from secrag.db.queries import Queries
from secrag.errors import ConfigError, SecragError
from secrag.settings import Settings, get_settings

from .errors import SecragGroup
from .sources_docs import docs

log = logging.getLogger(__name__)

PROBE_WORKERS = 8


@click.group(cls=SecragGroup)
def sources() -> None:
    """List the upstream sources and check their current versions."""


sources.add_command(docs)


def _upstream(spec: SourceSpec) -> str:
    if spec.tracking == "feed":
        return urlsplit(spec.feed_url).hostname or "-"
    if spec.tracking == "bundled":
        return "bundled with secrag"
    return spec.github or spec.repo or "-"


@sources.command("list")
def list_sources() -> None:
    """Every registered source, and its last refresh attempt, last success and last error when the store is up."""
    history = _history(get_settings())
    header = f"{'name':<20} {'tracking':<8} {'upstream':<44} {'parser':<22} {'category':<12} enabled"
    click.echo(header + ("  last attempt                         last success      last error" if history else ""))
    for spec in sorted(default_registry().values(), key=lambda s: s.name):
        line = (
            f"{spec.name:<20} {spec.tracking:<8} {_upstream(spec):<44} {spec.parser:<22} "
            f"{spec.category:<12} {'yes' if spec.enabled else 'no':<7}"
        )
        if history:
            line += "  " + _history_columns(history.get(spec.name))
        click.echo(line.rstrip())


def _store_url(settings: Settings) -> str | None:
    """The store's URL when it is reachable without starting anything (never starts a database)."""
    if settings.database_url:
        return settings.database_url
    status = embedded.status(settings.pgdata)
    if not status.running or not status.uri:
        return None
    return database.with_database(status.uri, settings.database_name)


def _rows(settings: Settings, query: Callable[[Queries], str]) -> list[tuple[Any, ...]]:
    """Rows of the `status` query that `query` picks, or [] when no store is reachable right now."""
    url = _store_url(settings)
    if url is None:
        return []
    try:
        with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
            return list(conn.execute(query(Queries(settings.sql_dir, "status"))).fetchall())
    except (SecragError, psycopg.Error) as exc:
        log.debug("the store is not readable", extra={"reason": str(exc).strip()[:200]})
        return []


def _history(settings: Settings) -> dict[str, tuple[Any, ...]]:
    return {row[0]: row[1:] for row in _rows(settings, lambda q: q.refresh_history)}


def _history_columns(row: tuple[Any, ...] | None) -> str:
    if row is None:
        return "never"
    at, status, phase, success, error = row
    attempt = (
        f"{at:%Y-%m-%d %H:%M} {status}" + (f" ({phase})" if status not in ("published", "unchanged") and phase else "")
        if at
        else "-"
    )
    done = f"{success:%Y-%m-%d %H:%M}" if success else "-"
    return f"{attempt:<36} {done:<17} {(error or '')[:80]}"


def _current_versions(settings: Settings) -> dict[str, str | None]:
    """{source: current_version} from the store, or {} when no database is reachable right now."""
    return {name: current for name, current in _rows(settings, lambda q: q.published_versions)}


def _state(version: str, current: dict[str, str | None], name: str) -> str:
    if not current:
        return ""
    stored = current.get(name)
    if stored is None:
        return "new"
    return "unchanged" if stored == version else f"changed (was {stored})"


@sources.command()
@click.argument("names", nargs=-1)
@click.pass_context
def check(ctx: click.Context, names: tuple[str, ...]) -> None:
    """Probe upstream versions (all enabled sources, or NAMES) and say which changed."""
    registry = default_registry()
    unknown = sorted(set(names) - set(registry))
    if unknown:
        raise ConfigError(f"unknown source(s): {', '.join(unknown)}", hint="see `secrag sources list`")
    specs = (
        [registry[n] for n in dict.fromkeys(names)]
        if names
        else [s for s in sorted(registry.values(), key=lambda s: s.name) if s.enabled]
    )
    settings = get_settings()
    upstream = upstream_for(settings)
    current = _current_versions(settings)

    def attempt(spec: SourceSpec) -> UpstreamVersion | SecragError:
        try:
            return upstream.probe(spec)
        except SecragError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=PROBE_WORKERS) as pool:
        outcomes = list(pool.map(attempt, specs))
    failed = 0
    for spec, outcome in zip(specs, outcomes, strict=True):
        if isinstance(outcome, SecragError):
            failed += 1
            click.echo(f"{spec.name:<20} FAILED  {outcome.one_line()}")
            continue
        shown = outcome.version
        if outcome.commit and outcome.commit != outcome.version:
            shown += f" ({outcome.commit[:12]})"
        click.echo(f"{spec.name:<20} {shown:<42} {_state(outcome.version, current, spec.name)}".rstrip())
    if failed:
        click.echo(f"{failed} of {len(specs)} source(s) could not be checked", err=True)
        ctx.exit(1)
