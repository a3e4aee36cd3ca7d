"""Rate limits from response headers, and when a poller keeping a reserve must wait."""

from __future__ import annotations

from secrag.net.rate_limits import RESERVE, RateLimit, refused_until


def test_rate_limit_from_headers_in_any_case():
    stated = RateLimit.from_headers(
        {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Reset": "100"}
    )
    assert stated == RateLimit(5000, 4999, 100.0)
    assert RateLimit.from_headers({"x-ratelimit-limit": "60"}) is None
    assert (
        RateLimit.from_headers({"x-ratelimit-limit": "x", "x-ratelimit-remaining": "1", "x-ratelimit-reset": "1"})
        is None
    )


def test_a_poller_stops_at_its_reserve_until_the_reset():
    assert RateLimit(60, RESERVE + 1, 1000.0).wait(now=900.0) == 0.0
    assert RateLimit(60, RESERVE, 1000.0).wait(now=900.0) == 100.0
    assert RateLimit(60, 0, 1000.0).wait(now=1001.0) == 0.0  # the window has reset


def test_a_refusal_says_when_to_come_back():
    assert refused_until({"Retry-After": "30"}, now=100.0) == 130.0
    assert refused_until({"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "500"}) == 500.0
    assert refused_until({}) is None
