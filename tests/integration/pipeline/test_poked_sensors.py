"""A source sensor between probes, through its cursor with a real Dagster instance: a tick reads the pokes; a poke
(as `secrag hooks` records it) of the source's repository makes the next tick probe and is marked answered; no poke
keeps the poll cadence."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import httpx
import pytest

from pipeline.probe_cursor import decode_cursor
from pipeline.resources import UpstreamResource
from pipeline.sources.mirror import Mirror
from secrag.db import database
from secrag.errors import FetchError
from serving.hooks.app import HOOKS_ROLE
from serving.hooks.signatures import sign
from tests.plugins.graph import Harness, harness
from tests.plugins.hooks_server import serve_hooks
from tests.plugins.mirror_changes import add_commit

pytestmark = pytest.mark.filterwarnings("ignore::dagster.BetaWarning", "ignore::DeprecationWarning:dagster")
SENSOR = "mitre_car_upstream"
REPOSITORY = "mitre-attack/car"  # mitre_car's repository, as its webhook names it


@pytest.fixture
def graph(db_url: str, mirror: Mirror, tmp_path: Path, small_specs) -> Harness:
    return harness(db_url, mirror, tmp_path / "work", small_specs)


def later_tick(h: Harness, cursor: str | None, resources: dict | None = None) -> dg.SensorResult:
    """A tick as the daemon runs it after an earlier one (30 s ago)."""
    context = dg.SensorEvaluationContext(
        instance_ref=None,
        instance=h.instance,
        cursor=cursor,
        resources=resources or h.resources,
        last_tick_completion_time=time.time() - 30,
    )
    return h.defs.resolve_sensor_def(SENSOR)(context)


def first_tick(h: Harness) -> dg.SensorResult:
    return h.defs.resolve_sensor_def(SENSOR)(dg.build_sensor_context(resources=h.resources, instance=h.instance))


def poke(h: Harness, delivery: str, hook: str = REPOSITORY) -> None:
    """What the receiver records, as its login."""
    with database.connect(database.with_user(h.url, HOOKS_ROLE), autocommit=True) as conn:
        conn.execute(
            "INSERT INTO pokes (hook, delivery_id, event) VALUES (%(h)s, %(d)s, 'push')", {"h": hook, "d": delivery}
        )


def unseen(h: Harness) -> list[str]:
    """The pokes mitre_car's probes have not answered."""
    with h.connect() as conn:
        rows = conn.execute(
            "SELECT delivery_id FROM pokes WHERE id > (SELECT coalesce(poked_upto, 0) FROM sources"
            " WHERE name = 'mitre_car') ORDER BY id"
        ).fetchall()
    return [r[0] for r in rows]


def broken(h: Harness, tmp_path: Path) -> dict:
    gone = (tmp_path / "gone.git").as_uri()
    return {**h.resources, "upstream": UpstreamResource(repo_overrides={"mitre_car": gone}, probe_timeout=5)}


def test_the_sensor_ticks_every_30_seconds(graph: Harness) -> None:
    assert graph.defs.resolve_sensor_def(SENSOR).minimum_interval_seconds == 30


def test_no_poke_keeps_the_poll_cadence(graph: Harness, tmp_path: Path) -> None:
    cursor = first_tick(graph).cursor  # the first tick since the sensor started probes
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    # Not poked and probed just now: the tick does not ask the upstream (a broken one would fail the tick).
    quiet = later_tick(graph, cursor, broken(graph, tmp_path))
    assert quiet.skip_reason is not None and "not poked" in quiet.skip_reason.skip_message
    assert quiet.cursor is None and quiet.run_requests == []
    with graph.connect() as conn:  # a poll interval passes
        conn.execute("UPDATE sources SET last_check_at = now() - interval '1 day' WHERE name = 'mitre_car'")
    due = later_tick(graph, cursor)
    assert decode_cursor("mitre_car", due.cursor).version == new


def test_a_poke_makes_the_next_tick_probe_and_is_marked_seen(graph: Harness) -> None:
    cursor = first_tick(graph).cursor
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    poke(graph, "delivery-1")
    assert unseen(graph) == ["delivery-1"]
    poked = later_tick(graph, cursor)
    assert decode_cursor("mitre_car", poked.cursor).version == new  # the sensor asked the upstream itself
    assert unseen(graph) == []
    again = later_tick(graph, poked.cursor)
    assert again.skip_reason is not None and "not poked" in again.skip_reason.skip_message


def test_a_poke_of_another_repository_is_not_read_but_one_by_the_source_s_name_is(
    graph: Harness, tmp_path: Path
) -> None:
    cursor = first_tick(graph).cursor
    poke(graph, "attack-push", hook="mitre-attack/attack-stix-data")
    quiet = later_tick(graph, cursor, broken(graph, tmp_path))
    assert quiet.skip_reason is not None and "not poked" in quiet.skip_reason.skip_message
    poke(graph, "feed-post", hook="mitre_car")  # /hooks/feed/mitre_car: a signed POST for this one source
    probed = later_tick(graph, cursor)
    assert probed.skip_reason is not None and "unchanged" in probed.skip_reason.skip_message
    assert unseen(graph) == []


def test_a_poke_with_nothing_new_upstream_changes_nothing(graph: Harness) -> None:
    """A webhook is not believed: poked while the upstream has not moved, the probe finds the same version."""
    cursor = first_tick(graph).cursor
    poke(graph, "says-there-is-a-commit")
    same = later_tick(graph, cursor)
    assert same.skip_reason is not None and "unchanged" in same.skip_reason.skip_message
    assert same.run_requests == [] and unseen(graph) == []


def test_a_failing_probe_after_a_poke_is_a_failed_tick_and_keeps_the_cadence(graph: Harness, tmp_path: Path) -> None:
    cursor = first_tick(graph).cursor
    with graph.connect() as conn:
        conn.execute("UPDATE sources SET last_check_at = now() - interval '1 day' WHERE name = 'mitre_car'")
    poke(graph, "d-2")
    with pytest.raises(FetchError):
        later_tick(graph, cursor, broken(graph, tmp_path))
    assert unseen(graph) == []
    # The failed probe counts as the last probe: the next tick waits for the interval or a poke.
    waits = later_tick(graph, cursor, broken(graph, tmp_path))
    assert waits.skip_reason is not None and "not poked" in waits.skip_reason.skip_message


def test_a_signed_push_to_the_receiver_makes_the_next_tick_see_the_commit(graph: Harness, tmp_path: Path) -> None:
    """The whole push path but the run: a GitHub push webhook over HTTP, then the sensor's next tick."""
    cursor = first_tick(graph).cursor
    new = add_commit(graph.mirror, "mitre_car", {"analytics/CAR-2013-01-002.yaml": None})
    body = b'{"ref": "refs/heads/master", "after": "%s"}' % new.encode()
    with serve_hooks(graph.url, {REPOSITORY: "car-secret"}) as base:
        forged = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "f", "X-Hub-Signature-256": sign(b"x", body)}
        assert httpx.post(f"{base}/hooks/github/{REPOSITORY}", content=body, headers=forged).status_code == 401
        assert later_tick(graph, cursor, broken(graph, tmp_path)).skip_reason is not None  # nothing recorded
        signed = {**forged, "X-GitHub-Delivery": "g", "X-Hub-Signature-256": sign(b"car-secret", body)}
        assert httpx.post(f"{base}/hooks/github/{REPOSITORY}", content=body, headers=signed).status_code == 202
    moved = later_tick(graph, cursor)
    assert decode_cursor("mitre_car", moved.cursor).version == new
    assert unseen(graph) == []
