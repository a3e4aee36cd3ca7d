"""Approved tuning in the store: `secrag tune apply|rollback` write a tuned value and its audit entry in one
transaction, keep the newest entries (the plans file's `tuning.history`) and log older ones before they
are dropped. The API reads the values within seconds (serving/feedback/tuned_plans.py)."""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from secrag.db.queries import Queries
from secrag.errors import ConfigError
from serving.contract.query_classes import QUERY_TYPES
from serving.feedback.tuned_plans import SCORE_THRESHOLD
from serving.plans.plans_file import PlansConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AuditEntry:
    """One approved change: who, when, what, from which value to which, why (tuning_audit)."""

    id: int
    at: dt.datetime
    who: str
    action: str
    setting: str
    query_type: str
    old: float
    old_tuned: bool  # false: `old` was the plans file's value
    new: float
    new_tuned: bool  # false: the tuned value was removed (the plans file's value serves again)
    reason: str
    rolls_back: int | None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "at": self.at.isoformat(timespec="seconds")}


def history(conn: psycopg.Connection, q: Queries, limit: int) -> list[AuditEntry]:
    """The newest `limit` entries, newest first."""
    return [AuditEntry(*row) for row in conn.execute(q.audit_history, {"limit": limit})]


def apply_change(
    conn: psycopg.Connection, q: Queries, config: PlansConfig, query_type: str, new: float, *, who: str, reason: str
) -> AuditEntry:
    """Approve `new` as the score threshold of `query_type`: within the plans file's bounds, with a reason."""
    if query_type not in QUERY_TYPES:
        raise ConfigError(f"unknown query type {query_type!r}; known: {', '.join(QUERY_TYPES)}")
    _check_bounds(config, new)
    with conn.transaction():
        conn.execute(q.lock_tuning)
        old, old_tuned = _current(conn, q, config, query_type)
        entry = _record(conn, q, "apply", query_type, (old, old_tuned), (new, True), who, reason, None)
        _set(conn, q, query_type, new, True, entry.id)
        _prune(conn, q, config.tuning.history)
    return entry


def rollback(
    conn: psycopg.Connection, q: Queries, config: PlansConfig, entry_id: int, *, who: str, reason: str
) -> AuditEntry:
    """Restore the state before audit entry `entry_id` (its `old`: a tuned value, or the plans file's)."""
    with conn.transaction():
        conn.execute(q.lock_tuning)
        row = conn.execute(q.audit_entry, {"id": entry_id}).fetchone()
        if row is None:
            raise ConfigError(
                f"no tuning audit entry {entry_id}",
                hint=f"`secrag tune history` lists the kept entries (the newest {config.tuning.history})",
            )
        target = AuditEntry(*row)
        if target.old_tuned:
            _check_bounds(config, target.old)
        restored = target.old if target.old_tuned else config.resolve(target.query_type).score_threshold
        current = _current(conn, q, config, target.query_type)
        entry = _record(
            conn, q, "rollback", target.query_type, current, (restored, target.old_tuned), who, reason, target.id
        )
        _set(conn, q, target.query_type, restored, target.old_tuned, entry.id)
        _prune(conn, q, config.tuning.history)
    return entry


def _check_bounds(config: PlansConfig, value: float) -> None:
    low, high = config.tuning.threshold_min, config.tuning.threshold_max
    if not low <= value <= high:
        raise ConfigError(f"threshold {value} is outside the safe bounds [{low}, {high}] of the plans file's tuning")


def _current(conn: psycopg.Connection, q: Queries, config: PlansConfig, query_type: str) -> tuple[float, bool]:
    row = conn.execute(q.tuned_value, {"setting": SCORE_THRESHOLD, "query_type": query_type}).fetchone()
    if row is not None:
        return float(row[0]), True
    return config.resolve(query_type).score_threshold, False


def _record(
    conn: psycopg.Connection,
    q: Queries,
    action: str,
    query_type: str,
    old: tuple[float, bool],
    new: tuple[float, bool],
    who: str,
    reason: str,
    rolls_back: int | None,
) -> AuditEntry:
    if not reason.strip():
        raise ConfigError("a reason is required")
    params = {
        "who": who,
        "action": action,
        "setting": SCORE_THRESHOLD,
        "query_type": query_type,
        "old": old[0],
        "old_tuned": old[1],
        "new": new[0],
        "new_tuned": new[1],
        "reason": reason,
        "rolls_back": rolls_back,
    }
    row = conn.execute(q.insert_audit, params).fetchone()
    assert row is not None  # INSERT ... RETURNING
    return AuditEntry(*row)


def _set(conn: psycopg.Connection, q: Queries, query_type: str, value: float, tuned: bool, audit_id: int) -> None:
    key = {"setting": SCORE_THRESHOLD, "query_type": query_type}
    if tuned:
        conn.execute(q.set_tuned_value, {**key, "value": value, "audit_id": audit_id})
    else:
        conn.execute(q.remove_tuned_value, key)


def _prune(conn: psycopg.Connection, q: Queries, keep: int) -> None:
    """Keep the newest `keep` entries; the older ones go to the log first (same transaction)."""
    dropped = [AuditEntry(*row) for row in conn.execute(q.audit_beyond, {"keep": keep})]
    for entry in dropped:
        log.info("tuning audit entry dropped (beyond the newest %d): %s", keep, json.dumps(entry.as_dict()))
    if dropped:
        conn.execute(q.drop_audit, {"id": dropped[-1].id})
