"""`secrag tune report|apply|rollback|history`: threshold proposals from the opt-in query log; approved
changes in the store with an audit entry (secrag_cli/tuning_audit.py), served within seconds."""

from __future__ import annotations

import getpass
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click
import psycopg

from secrag.db import database
from secrag.db.queries import Queries
from secrag.settings import get_settings

from .errors import SecragGroup

if TYPE_CHECKING:
    from serving.feedback.tuning import LoggedQuery, Proposal
    from serving.plans.plans_file import PlansConfig

    from .tuning_audit import AuditEntry


def _plans(path: str | None) -> PlansConfig:
    """The plans file given, else the shipped one (its tuning bounds and defaults)."""
    from serving.plans.plans_file import load_plans
    from serving.settings.api import default_plans_file

    return load_plans(Path(path) if path else default_plans_file())


@click.group(cls=SecragGroup)
def tune() -> None:
    """Tune per-query-type score thresholds from the query log."""


@tune.command()
@click.option("--plans", "plans_path", type=click.Path(), help="Plans file (default: serving/plans/plans.yaml).")
@click.option("--days", default=30, show_default=True, help="Look at this many days of the log.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def report(plans_path: str | None, days: int, as_json: bool) -> None:
    """Per query class top-score figures, the attention log and threshold proposals (nothing is written)."""
    from serving.feedback.attention import FlaggedQuery
    from serving.feedback.attention import report as attention_report
    from serving.feedback.tuning import class_scores

    config = _plans(plans_path)
    with _connect() as (conn, q):
        log, proposals = _proposals(conn, q, config, days)
        flagged = [FlaggedQuery(*row) for row in conn.execute(q.recent_attention, {"days": days})]
    classes = class_scores(log)
    attention = attention_report(flagged)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "proposals": [p.__dict__ for p in proposals],
                    "classes": [c.__dict__ for c in classes],
                    "attention": {
                        "flagged": attention.flagged,
                        "kinds": dict(attention.kinds),
                        "unknown_attack_ids": dict(attention.unknown_ids),
                        "content_gaps": attention.gaps,
                    },
                },
                indent=2,
            )
        )
        return
    click.echo(f"{len(log)} logged queries in the last {days} days")
    if classes:
        click.echo(f"{'class':<14} {'queries':>7} {'empty':>6} {'mean':>7} {'p25':>7} {'min':>7}  (top score)")
    for c in classes:
        figures = (
            f"{c.mean:7.3f} {c.p25:7.3f} {c.minimum:7.3f}"
            if c.mean is not None and c.p25 is not None and c.minimum is not None
            else f"{'-':>7} {'-':>7} {'-':>7}"
        )
        click.echo(f"{c.query_class:<14} {c.count:>7} {c.empty:>6} {figures}")
    click.echo(f"attention: {attention.flagged} flagged queries")
    for name, count in attention.kinds.most_common():
        click.echo(f"  {name:<20} {count:>6}")
    if attention.unknown_ids:
        click.echo(
            "  ATT&CK ids not in the lookup: "
            + ", ".join(f"{i} ({n})" for i, n in attention.unknown_ids.most_common(20))
        )
    if attention.gaps:
        click.echo("content gaps (queries with no result):")
        for text, count in attention.gaps:
            click.echo(f"  {count:>4}  {text[:100]}")
    if not proposals:
        click.echo("no changes proposed (too few samples, or thresholds already fit)")
    for p in proposals:
        click.echo(
            f"{p.query_type:<14} {p.current:.4f} -> {p.proposed:.4f}  confidence {p.confidence:.2f}  ({p.reason})"
        )
        click.echo(f"  apply with: secrag tune apply {p.query_type} {p.proposed} --reason '...'")
    if proposals:
        click.echo("or approve them one by one: secrag tune apply --interactive")


@tune.command()
@click.argument("query_type", required=False)
@click.argument("threshold", type=float, required=False)
@click.option("--reason", help="Why this change was approved (asked for with --interactive).")
@click.option("--who", default=None, help="Who approved it (default: the current user).")
@click.option("--interactive", is_flag=True, help="Go through the report's proposals and approve each or not.")
@click.option("--days", default=30, show_default=True, help="With --interactive: the days of log to propose from.")
@click.option("--plans", "plans_path", type=click.Path(), help="Plans file (default: serving/plans/plans.yaml).")
def apply(
    query_type: str | None,
    threshold: float | None,
    reason: str | None,
    who: str | None,
    interactive: bool,
    days: int,
    plans_path: str | None,
) -> None:
    """Approve THRESHOLD as QUERY_TYPE's score threshold (or, with --interactive, the report's proposals one
    by one): written to the store with an audit entry; every API worker serves it within seconds."""

    from .tuning_audit import apply_change

    config = _plans(plans_path)
    who = who or getpass.getuser()
    if interactive:
        if query_type is not None or threshold is not None:
            raise click.UsageError("--interactive takes no QUERY_TYPE or THRESHOLD: it goes through the proposals")
        _apply_interactively(config, days, who, reason)
        return
    if query_type is None or threshold is None:
        raise click.UsageError("give QUERY_TYPE and THRESHOLD, or --interactive")
    if not reason:
        raise click.UsageError("--reason is required: say why this change was approved")
    with _connect() as (conn, q):
        entry = apply_change(conn, q, config, query_type, threshold, who=who, reason=reason)
    click.echo(_describe(entry))


@tune.command()
@click.argument("entry_id", type=int)
@click.option("--reason", required=True, help="Why the change is rolled back.")
@click.option("--who", default=None, help="Who decided it (default: the current user).")
@click.option("--plans", "plans_path", type=click.Path(), help="Plans file (default: serving/plans/plans.yaml).")
def rollback(entry_id: int, reason: str, who: str | None, plans_path: str | None) -> None:
    """Restore the threshold ENTRY_ID changed to its value before (a rollback is itself an audit entry)."""

    from .tuning_audit import rollback as roll_back

    config = _plans(plans_path)
    with _connect() as (conn, q):
        entry = roll_back(conn, q, config, entry_id, who=who or getpass.getuser(), reason=reason)
    click.echo(_describe(entry))


@tune.command()
@click.option(
    "--limit", default=20, show_default=True, type=click.IntRange(1, 10_000), help="How many entries, newest first."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def history(limit: int, as_json: bool) -> None:
    """The audit entries of approved changes and rollbacks, newest first."""
    from .tuning_audit import history as read_history

    with _connect() as (conn, q):
        entries = read_history(conn, q, limit)
    if as_json:
        click.echo(json.dumps([e.as_dict() for e in entries], indent=2))
        return
    if not entries:
        click.echo("no tuning changes recorded")
    for e in entries:
        click.echo(f"#{e.id} {e.at:%Y-%m-%d %H:%M:%S%z} {e.who}: {_describe(e)}  ({e.reason})")


@contextmanager
def _connect() -> Iterator[tuple[psycopg.Connection, Queries]]:
    settings = get_settings()
    q = Queries(settings.sql_dir, "tuning")
    # Autocommit: each approved change is its own transaction (tuning_audit), served once it commits, even
    # while an interactive session goes on.
    url = database.database_url(settings)
    with database.connect(url, timeout=settings.connect_timeout, autocommit=True) as conn:
        yield conn, q


def _proposals(
    conn: psycopg.Connection, q: Queries, config: PlansConfig, days: int
) -> tuple[list[LoggedQuery], list[Proposal]]:
    from serving.feedback.tuned_plans import read_thresholds
    from serving.feedback.tuning import LoggedQuery, propose

    rows = conn.execute(q.recent_queries, {"days": days}).fetchall()
    log = [LoggedQuery(t or "default", s, n) for t, s, n in rows]
    tuned = read_thresholds(conn, Queries(get_settings().sql_dir, "serving").tuned_values)
    return log, propose(config, log, tuned)


def _apply_interactively(config: PlansConfig, days: int, who: str, reason: str | None) -> None:
    from .tuning_audit import apply_change

    with _connect() as (conn, q):
        _, proposals = _proposals(conn, q, config, days)
        if not proposals:
            click.echo("no changes proposed (too few samples, or thresholds already fit)")
            return
        for p in proposals:
            click.echo(f"{p.query_type}: score_threshold {p.current:.4f} -> {p.proposed:.4f}")
            click.echo(f"  {p.reason}; confidence {p.confidence:.2f} ({p.samples} queries)")
            answer = click.prompt("  apply? [y]es / [n]o / [q]uit", type=click.Choice(["y", "n", "q"]), default="n")
            if answer == "q":
                return
            if answer == "n":
                continue
            why = click.prompt("  reason", default=reason or f"tune report: {p.reason}")
            entry = apply_change(conn, q, config, p.query_type, p.proposed, who=who, reason=why)
            click.echo("  " + _describe(entry))


def _describe(entry: AuditEntry) -> str:
    old = f"{entry.old}" + ("" if entry.old_tuned else " (plans file)")
    new = f"{entry.new}" + ("" if entry.new_tuned else " (plans file)")
    what = f"rollback of #{entry.rolls_back}" if entry.action == "rollback" else "applied"
    return f"{entry.query_type}: {entry.setting} {old} -> {new} ({what}, audit entry #{entry.id})"
