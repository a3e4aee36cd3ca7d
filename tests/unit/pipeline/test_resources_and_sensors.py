"""Pure pieces of the wiring: freshness verdicts, folder cursors, resources, staleness."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from pipeline.checks import freshness_verdict
from pipeline.folders import FileEntry, FolderScan
from pipeline.resources import MAX_PROBE_SECONDS, EmbedderResource, UpstreamResource
from pipeline.sensors import decode_folder_cursor, encode_folder_cursor, folder_changes
from pipeline.sources.upstream import UpstreamConfig
from secrag.errors import ConfigError

NOW = datetime(2026, 11, 22, 12, tzinfo=UTC)


def _state(current="v2", seen="v2", checked=timedelta(minutes=5), error=None, seen_for=timedelta(hours=3)):
    return (
        current,
        seen,
        NOW - checked if checked is not None else None,
        NOW - timedelta(days=1),
        "ok",
        10,
        error,
        NOW - seen_for,
    )


# A 3-minute poll interval gives a window of 2 x 180 s + 600 s = 16 min.
@pytest.mark.parametrize(
    "state, fresh, reason",
    [
        (_state(), True, None),
        (_state(checked=timedelta(minutes=17)), False, "not answered a probe"),
        (_state(checked=None), False, "not answered a probe"),
        (_state(seen="v3", seen_for=timedelta(minutes=2)), True, None),  # being refreshed
        (_state(seen="v3", seen_for=timedelta(minutes=17)), False, "newer upstream version has waited"),
        (_state(current=None), False, "nothing published"),
        (None, False, "never registered"),
    ],
)
def test_freshness_against_the_poll_interval(state, fresh, reason):
    passed, facts = freshness_verdict(state, 180, NOW)
    assert passed is fresh
    assert reason is None or reason in str(facts["reason"])
    assert state is None or facts["window_seconds"] == 960


def test_folder_cursor_round_trip_and_changes():
    before = {"a": FileEntry(1, 1, "h1"), "b": FileEntry(1, 1, "h2")}
    after = {"b": FileEntry(2, 2, "h3"), "c": FileEntry(1, 1, "h4")}
    seq, digest, files = decode_folder_cursor(encode_folder_cursor(4, FolderScan(after)))
    assert (seq, digest, files) == (4, FolderScan(after).digest(), after)
    assert decode_folder_cursor(None) == (0, "", {})
    assert folder_changes(before, after) == {"new": ["c"], "deleted": ["a"], "changed": ["b"]}


def test_embedder_refuses_models_not_in_the_registry():
    with pytest.raises(ConfigError, match="not in the model registry"):
        EmbedderResource(model="bert-huge").embedder()
    assert EmbedderResource().dimensions() == 384


def test_probe_timeout_stays_under_the_sensor_tick_limit():
    cfg = UpstreamConfig(probe_timeout=300).with_mirror({"x": "file:///m/x.git"}, {}, "file:///m/api")
    resource = UpstreamResource.for_config(cfg)
    built = resource.config()
    assert built.probe_timeout == MAX_PROBE_SECONDS
    assert built.repo_overrides == {"x": "file:///m/x.git"} and built.policy.allow_file
