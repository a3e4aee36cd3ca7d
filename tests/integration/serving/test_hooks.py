"""The webhook receiver over uvicorn on loopback, with real signatures over a real database: a repository's signed
push is recorded once; forged, unsigned, replayed, unknown-hook and oversized deliveries change nothing and are
counted; delivery ids are remembered per hook, within the hook's retention."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from secrag.db import database
from serving.hooks.app import HOOKS_ROLE
from serving.hooks.signatures import sign
from tests.plugins.hooks_server import serve_hooks

SECRET = b"it-is-a-secret"
FEED_SECRET = b"the-feed-s-secret"
CAP = 4096
KEPT = 10  # SECRAG_HOOK_DELIVERY_IDS_KEPT's floor
PUSH = json.dumps({"ref": "refs/heads/master", "after": "0" * 40, "repository": {"full_name": "SigmaHQ/sigma"}})


@pytest.fixture
def hooks_base(db_url: str) -> Iterator[str]:
    secrets = {"SigmaHQ/sigma": SECRET.decode(), "cisa_kev": FEED_SECRET.decode()}
    with serve_hooks(db_url, secrets, CAP, hook_delivery_ids_kept=KEPT) as base:
        yield base


def github(
    base: str,
    body: bytes,
    *,
    repository: str = "SigmaHQ/sigma",
    event: str = "push",
    delivery: str | None = None,
    **headers: str,
) -> httpx.Response:
    sent = {
        "Content-Type": "application/json",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(SECRET, body),
        **headers,
    }
    return httpx.post(f"{base}/hooks/github/{repository}", content=body, headers=sent, timeout=10)


def pokes(db: psycopg.Connection) -> list[tuple[Any, ...]]:
    return db.execute("SELECT hook, delivery_id, event FROM pokes ORDER BY id").fetchall()


def counted(base: str) -> dict[str, float]:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    found: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith('secrag_hook_deliveries_total{outcome="'):
            label, value = line.split(" ")
            found[label.split('"')[1]] = float(value)
    return found


def test_a_signed_push_is_recorded_as_a_poke(hooks_base: str, db: psycopg.Connection) -> None:
    answer = github(hooks_base, PUSH.encode(), delivery="d-1")
    assert answer.status_code == 202, answer.text
    assert answer.json()["kind"] == "accepted"
    assert pokes(db) == [("sigmahq/sigma", "d-1", "push")]
    release = github(hooks_base, b'{"action":"published"}', event="release", delivery="d-2")
    assert release.status_code == 202
    assert [row[2] for row in pokes(db)] == ["push", "release"]
    assert counted(hooks_base)["accepted"] == 2


def test_refused_deliveries_change_nothing_and_are_counted(hooks_base: str, db: psycopg.Connection) -> None:
    body = PUSH.encode()
    assert github(hooks_base, body, delivery="first").status_code == 202
    before = pokes(db)

    replay = github(hooks_base, body, delivery="first")
    assert (replay.status_code, replay.json()["kind"]) == (409, "replayed")
    forged = github(hooks_base, body, **{"X-Hub-Signature-256": sign(b"not-the-secret", body)})
    assert (forged.status_code, forged.json()["kind"]) == (401, "forged")
    tampered = github(hooks_base, body + b" ", **{"X-Hub-Signature-256": sign(SECRET, body)})
    assert tampered.status_code == 401
    unsigned = github(hooks_base, body, **{"X-Hub-Signature-256": ""})
    assert (unsigned.status_code, unsigned.json()["kind"]) == (401, "unsigned")
    unknown = github(hooks_base, body, repository="SigmaHQ/not-sigma")
    assert (unknown.status_code, unknown.json()["kind"]) == (404, "unknown_source")
    large = b"x" * (CAP + 1)
    declared = github(hooks_base, large)
    assert (declared.status_code, declared.json()["kind"]) == (413, "too_large")
    streamed = httpx.post(  # chunked: no length declared, cut off while reading
        f"{hooks_base}/hooks/github/SigmaHQ/sigma",
        content=iter([b"x" * 1024] * 8),
        headers={"X-GitHub-Event": "push", "X-GitHub-Delivery": "big", "X-Hub-Signature-256": sign(SECRET, large)},
        timeout=10,
    )
    assert streamed.status_code == 413
    ping = github(hooks_base, b"{}", event="ping")
    assert (ping.status_code, ping.json()["kind"]) == (200, "ignored")

    assert pokes(db) == before
    assert counted(hooks_base) == {
        "accepted": 1,
        "ignored": 1,
        "replayed": 1,
        "forged": 2,
        "unsigned": 1,
        "unknown_source": 1,
        "too_large": 2,
        "invalid": 0,
    }


def test_a_feed_s_signed_post_is_recorded(hooks_base: str, db: psycopg.Connection) -> None:
    body = b'{"updated":"2026-12-06"}'
    headers = {"X-Secrag-Delivery": "kev-1", "X-Secrag-Signature-256": sign(FEED_SECRET, body)}
    answer = httpx.post(f"{hooks_base}/hooks/feed/cisa_kev", content=body, headers=headers, timeout=10)
    assert answer.status_code == 202, answer.text
    assert pokes(db) == [("cisa_kev", "kev-1", "feed")]
    missing = httpx.post(
        f"{hooks_base}/hooks/feed/cisa_kev", content=body, headers={"X-Secrag-Signature-256": sign(FEED_SECRET, body)}
    )
    assert (missing.status_code, missing.json()["kind"]) == (400, "invalid")


def test_the_hooks_role_inserts_pokes_and_reads_nothing(db_url: str) -> None:
    with database.connect(database.with_user(db_url, HOOKS_ROLE), autocommit=True) as conn:
        conn.execute("INSERT INTO pokes (hook, delivery_id, event) VALUES ('sigmahq/sigma', 'x', 'push')")
        conn.execute("SELECT forget_deliveries('sigmahq/sigma', interval '1 day', 10)")
        for statement in (
            "SELECT count(*) FROM pokes",
            "UPDATE pokes SET event = 'release'",
            "UPDATE sources SET poked_upto = 0",
            "DELETE FROM pokes",
            "SELECT count(*) FROM documents",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(statement)


def test_a_delivery_id_is_refused_again_only_by_the_hook_that_received_it(
    hooks_base: str, db: psycopg.Connection
) -> None:
    body = PUSH.encode()
    assert github(hooks_base, body, delivery="same").status_code == 202
    signed = {"X-Secrag-Delivery": "same", "X-Secrag-Signature-256": sign(FEED_SECRET, body)}
    assert httpx.post(f"{hooks_base}/hooks/feed/cisa_kev", content=body, headers=signed).status_code == 202
    assert github(hooks_base, body, repository="sigmahq/SIGMA", delivery="same").status_code == 409  # any case
    assert [row[:2] for row in pokes(db)] == [("sigmahq/sigma", "same"), ("cisa_kev", "same")]


def test_a_hook_remembers_its_newest_delivery_ids_within_its_retention(hooks_base: str, db: psycopg.Connection) -> None:
    body = PUSH.encode()
    for i in range(KEPT + 2):
        assert github(hooks_base, body, delivery=f"d-{i}").status_code == 202
    kept = [row[1] for row in pokes(db)]
    assert kept == [f"d-{i}" for i in range(2, KEPT + 2)]  # the newest KEPT; d-0 and d-1 forgotten
    assert github(hooks_base, body, delivery=f"d-{KEPT + 1}").status_code == 409
    assert github(hooks_base, body, delivery="d-0").status_code == 202  # forgotten: accepted (a look, no more)
    # Older than the retention (7 days by default): forgotten at the hook's next accepted delivery.
    db.execute("UPDATE pokes SET received_at = now() - interval '8 days' WHERE delivery_id = 'd-5'")
    assert github(hooks_base, body, delivery="late").status_code == 202
    assert "d-5" not in [row[1] for row in pokes(db)]
    assert github(hooks_base, body, delivery="d-5").status_code == 202
    assert len(pokes(db)) == KEPT
