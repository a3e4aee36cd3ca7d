"""The gate: API-key requirement, moving-window rates and heavy-query slots (fake clock, no server)."""

from __future__ import annotations

import hashlib
import time

import pytest

from serving.access.keys import ApiKeys, Principal, UnknownApiKey
from serving.access.quotas import Gate, window
from serving.contract.errors import KeyRequired, TooManyRequests, public_error
from serving.settings import ServingSettings

KEYS = ApiKeys({hashlib.sha256(b"k1").hexdigest(): Principal("acme", "alice")})


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The wall clock the rate limiter (`limits`' memory storage) reads, stopped at 1000 s."""
    fake = Clock()
    monkeypatch.setattr(time, "time", fake)
    return fake


def _gate(clock: Clock, **settings: object) -> Gate:
    return Gate(KEYS, ServingSettings(_env_file=None, **settings))  # type: ignore[call-arg]


def test_anonymous_callers_are_refused_when_a_key_is_required(clock: Clock) -> None:
    gate = _gate(clock, require_api_key=True)
    with pytest.raises(KeyRequired):
        gate.caller(None, "10.0.0.1")
    assert gate.caller("k1", "10.0.0.1").principal.tenant == "acme"
    with pytest.raises(UnknownApiKey):
        gate.caller("nope", "10.0.0.1")
    assert public_error(KeyRequired("x")).status == 401


def test_rates_refill_over_time_and_say_when_to_retry(clock: Clock) -> None:
    gate = _gate(clock, anonymous_rate_per_minute=60, rate_per_minute=600)
    for _ in range(6):  # a burst of a tenth of a minute's requests
        gate.caller(None, "10.0.0.1")
    clock.now += 0.5
    with pytest.raises(TooManyRequests) as info:
        gate.caller(None, "10.0.0.1")
    assert public_error(info.value).status == 429 and public_error(info.value).headers == {"Retry-After": "6"}
    gate.caller(None, "10.0.0.2")  # another address has its own window
    gate.caller("k1", "10.0.0.1")  # and a keyed caller its own
    clock.now += 5.0
    with pytest.raises(TooManyRequests):  # the burst is still inside its tenth of a minute
        gate.caller(None, "10.0.0.1")
    clock.now += 0.6  # 6.1 s after the burst
    for _ in range(6):  # then the whole burst is back
        gate.caller(None, "10.0.0.1")


def test_heavy_slots_per_key_and_shared_by_all_anonymous_callers(clock: Clock) -> None:
    gate = _gate(clock, anonymous_heavy_concurrency=1, heavy_concurrency=1, anonymous_rate_per_minute=0)
    first, second = gate.caller(None, "10.0.0.1"), gate.caller(None, "10.0.0.2")
    keyed = gate.caller("k1", "10.0.0.3")
    with gate.slot(first):
        with pytest.raises(TooManyRequests, match="at once"):
            with gate.slot(second):
                pass
        with gate.slot(keyed):  # keyed callers are not held up by anonymous ones
            with pytest.raises(TooManyRequests):
                with gate.slot(keyed):
                    pass
    with gate.slot(second):  # released
        pass


def test_zero_means_no_limit(clock: Clock) -> None:
    gate = _gate(clock, anonymous_rate_per_minute=0, anonymous_heavy_concurrency=0)
    caller = gate.caller(None, "10.0.0.1")
    for _ in range(1000):
        gate.caller(None, "10.0.0.1")
    with gate.slot(caller), gate.slot(caller), gate.slot(caller):
        pass


def test_unknown_keys_are_limited_per_address_and_logged_without_the_key(
    caplog: pytest.LogCaptureFixture, clock: Clock
) -> None:
    gate = _gate(clock, failed_keys_per_minute=6)  # bursts of 3 in any 30 s
    with caplog.at_level("WARNING", logger="serving.access.quotas"):
        for guess in ("guess-1", "guess-2", "guess-3"):
            with pytest.raises(UnknownApiKey):
                gate.caller(guess, "10.0.0.9")
        clock.now += 0.5
        with pytest.raises(TooManyRequests, match="unknown API keys a minute") as info:
            gate.caller("guess-4", "10.0.0.9")
        assert public_error(info.value).headers == {"Retry-After": "30"}
        with pytest.raises(UnknownApiKey):  # other addresses have their own window
            gate.caller("guess-5", "10.0.0.1")
        gate.caller(None, "10.0.0.9")  # anonymous requests of the same address are not held up
        clock.now += 29.6
        with pytest.raises(UnknownApiKey):  # the window emptied: failures are answered 401 again
            gate.caller("guess-6", "10.0.0.9")
    clients = ["10.0.0.9"] * 3 + ["10.0.0.1", "10.0.0.9"]  # each counted failure, not the refused one
    assert [(r.getMessage(), r.__dict__["client"]) for r in caplog.records] == [("unknown API key", c) for c in clients]
    assert not any("guess" in str(r.__dict__.values()) for r in caplog.records)


def test_a_valid_key_is_looked_up_before_the_failed_key_window(clock: Clock) -> None:
    """Behind a proxy that is not trusted every caller has its address: a few bad keys must not lock out the
    keyed callers that share it. The window slows only the failures (keys are too strong to guess anyway)."""
    gate = _gate(clock, failed_keys_per_minute=6)
    for guess in ("guess-1", "guess-2", "guess-3"):
        with pytest.raises(UnknownApiKey):
            gate.caller(guess, "10.0.0.9")
    with pytest.raises(TooManyRequests, match="unknown API keys a minute"):
        gate.caller("guess-4", "10.0.0.9")
    for _ in range(10):  # a keyed caller behind the same address is admitted, and counts no failure
        assert gate.caller("k1", "10.0.0.9").principal.user == "alice"
    with pytest.raises(TooManyRequests):  # the failing keys are still held
        gate.caller("guess-5", "10.0.0.9")


def test_a_zero_failed_key_rate_means_no_limit(clock: Clock) -> None:
    gate = _gate(clock, failed_keys_per_minute=0)
    for _ in range(100):
        with pytest.raises(UnknownApiKey):
            gate.caller("nope", "10.0.0.9")


@pytest.mark.parametrize(
    ("rate", "burst", "expected"),
    [(600, 60, (60, 6)), (120, 12, (12, 6)), (25, 2, (2, 5)), (6, 3, (3, 30)), (3, 0, (1, 20))],
)
def test_a_window_allows_the_burst_and_never_more_than_the_rate(
    rate: int, burst: int, expected: tuple[int, int]
) -> None:
    item = window(rate, burst)
    assert item is not None and (item.amount, item.get_expiry()) == expected
    assert item.amount * 60 / item.get_expiry() <= rate
    assert window(0, 5) is None


def test_a_map_is_charged_its_searches_in_the_minute(clock: Clock) -> None:
    """A map's searches count against the caller's requests a minute at once (more than a tenth's burst);
    a map of more searches than the whole minute is refused with what to do."""
    gate = _gate(clock, rate_per_minute=60)
    caller = gate.caller("k1", "10.0.0.1")  # 1 of 60: the map's request, its first search
    with gate.searches(caller, 40, 1):
        pass  # 40 of 60
    with pytest.raises(TooManyRequests) as refused, gate.searches(caller, 22, 1):
        pass
    assert "would pass 60 requests a minute" in refused.value.detail and int(refused.value.headers["Retry-After"]) >= 1
    with pytest.raises(TooManyRequests) as whole, gate.searches(caller, 61, 1):
        pass
    assert "send the text in parts" in whole.value.detail
    clock.now += 61
    with gate.searches(caller, 51, 1):
        pass
    with gate.searches(caller, 1, 1):
        pass  # a map of one sentence is its request alone
    for _ in range(10):  # plain requests share the minute: 50 + 10
        clock.now += 1.2  # five in a tenth of a minute: within its burst of six
        gate.caller("k1", "10.0.0.1")
    clock.now += 1.2
    with pytest.raises(TooManyRequests) as full:
        gate.caller("k1", "10.0.0.1")
    assert "60 requests a minute" in full.value.detail


def test_a_maps_concurrent_searches_take_the_callers_free_slots(clock: Clock) -> None:
    gate = _gate(clock, heavy_concurrency=4, anonymous_heavy_concurrency=2)
    caller = gate.caller("k1", "10.0.0.1")
    with gate.slot(caller), gate.searches(caller, 3, 3) as width:
        assert width == 3  # its own slot and two free ones
        with gate.slot(caller), gate.searches(caller, 3, 3) as second:
            assert second == 1  # four slots taken: it searches on its own slot only
            with pytest.raises(TooManyRequests):
                with gate.slot(caller):
                    pass
    with gate.slot(caller), gate.slot(caller), gate.slot(caller), gate.slot(caller):
        pass  # every slot given back
    anonymous = gate.caller(None, "10.0.0.2")
    with gate.slot(anonymous), gate.searches(anonymous, 2, 4) as width:
        assert width == 2  # the anonymous pool's two slots
    unlimited = _gate(clock)  # 0: no slot limit
    with unlimited.searches(unlimited.caller("k1", "x"), 2, 4) as width:
        assert width == 4
