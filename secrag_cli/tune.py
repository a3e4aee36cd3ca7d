"""`secrag tune report|apply`: threshold proposals from the opt-in query log, audited changes."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import click

from secrag import database
from secrag.queries import Queries
from secrag.settings import get_settings

from .errors import SecragGroup


def _plans_file(path: str | None) -> Path:
    from serving.plans import default_plans_file

    return Path(path) if path else default_plans_file()


@click.group(cls=SecragGroup)
def tune() -> None:
    """Tune per-query-type score thresholds from the query log."""


@tune.command()
@click.option("--plans", "plans_path", type=click.Path(), help="Plans file (default: serving/plans.yaml).")
@click.option("--days", default=30, show_default=True, help="Look at this many days of the log.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def report(plans_path: str | None, days: int, as_json: bool) -> None:
    """Per query class top-score figures, the attention log and threshold proposals (nothing is written)."""
    from serving.attention import FlaggedQuery
    from serving.attention import report as attention_report
    from serving.plans import load_plans
    from serving.tuning import LoggedQuery, class_scores, propose, read_overlay

    settings = get_settings()
    path = _plans_file(plans_path)
    config = load_plans(path)
    q = Queries(settings.sql_dir, "tuning")
    with database.connect(database.database_url(settings), timeout=settings.connect_timeout) as conn:
        rows = conn.execute(q.recent_queries, {"days": days}).fetchall()
        flagged = [FlaggedQuery(*row) for row in conn.execute(q.recent_attention, {"days": days})]
    log = [LoggedQuery(t or "default", s, n) for t, s, n in rows]
    proposals = propose(config, log, read_overlay(path)["thresholds"])
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
        click.echo(f"{p.query_type:<14} {p.current:.4f} -> {p.proposed:.4f}  ({p.reason})")
        click.echo(f"  apply with: secrag tune apply {p.query_type} {p.proposed} --reason '...'")


@tune.command()
@click.argument("query_type")
@click.argument("threshold", type=float)
@click.option("--reason", required=True, help="Why this change was approved.")
@click.option("--who", default=None, help="Who approved it (default: the current user).")
@click.option("--plans", "plans_path", type=click.Path(), help="Plans file (default: serving/plans.yaml).")
def apply(query_type: str, threshold: float, reason: str, who: str | None, plans_path: str | None) -> None:
    """Write an approved threshold for QUERY_TYPE, with an audit entry (bounded history)."""
    from serving.plans import QUERY_TYPES, load_plans
    from serving.tuning import apply_change, overlay_path

    if query_type not in QUERY_TYPES:
        raise click.BadParameter(f"unknown query type; choose one of {', '.join(QUERY_TYPES)}")
    path = _plans_file(plans_path)
    entry = apply_change(load_plans(path), path, query_type, threshold, who=who or getpass.getuser(), reason=reason)
    load_plans(path)  # the result must still validate
    click.echo(f"{query_type}: score_threshold {entry['old']} -> {entry['new']} (written to {overlay_path(path)})")
