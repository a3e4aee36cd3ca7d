"""The source sensor's cursor: what the next probe needs survives a round trip; an older cursor still reads."""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.probe_cursor import decode_cursor, encode_cursor, rate_limited
from pipeline.sources.interface import UpstreamVersion
from secrag.net.rate_limits import RateLimit

SEEN = UpstreamVersion(
    "elastic",
    "release",
    "v9.1.0",
    "a" * 40,
    "https://github.com/elastic/detection-rules.git",
    datetime(2026, 11, 26, tzinfo=UTC),
    etag='W/"abc"',
    last_modified="Wed, 25 Nov 2026 10:00:00 GMT",
    validated="https://api.github.com/repos/elastic/detection-rules/releases/latest",
    rate=RateLimit(60, 42, 1.9e9),
)


def test_round_trip_keeps_the_version_its_validators_and_the_rate_limit():
    back = decode_cursor("elastic", encode_cursor(SEEN))
    assert back is not None
    assert (back.version, back.commit, back.url, back.etag, back.last_modified, back.rate) == (
        SEEN.version,
        SEEN.commit,
        SEEN.url,
        SEEN.etag,
        SEEN.last_modified,
        SEEN.rate,
    )
    assert back.validators(SEEN.validated) == {"If-None-Match": 'W/"abc"', "If-Modified-Since": SEEN.last_modified}
    assert back.validators("https://elsewhere.example/x") == {}


def test_an_older_cursor_is_the_bare_version_and_none_is_nothing():
    old = decode_cursor("kev", "2026.08.07")
    assert old is not None and old.version == "2026.08.07" and old.validators("") == {}
    assert decode_cursor("kev", None) is None


def test_a_used_up_limit_leaves_nothing_until_the_reset():
    limited = rate_limited(SEEN, "elastic", 2.0e9)
    assert limited.rate == RateLimit(60, 0, 2.0e9) and limited.version == SEEN.version
    assert rate_limited(None, "elastic", None).rate is None
