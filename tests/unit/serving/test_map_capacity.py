"""MapCapacity: the maps' turns of work (half the cores, within the pool less a reserve), one map's width and
its deadline."""

from __future__ import annotations

import threading
import time

from serving.mapping.capacity import MapCapacity
from serving.observability.in_flight import InFlight
from serving.settings import ServingSettings


def _capacity(cores: int = 2, **settings: object) -> MapCapacity:
    return MapCapacity.from_settings(ServingSettings(_env_file=None, **settings), cores=cores)  # type: ignore[call-arg]


def test_maps_take_half_the_cores_and_never_the_reserved_connections() -> None:
    two = _capacity(2)  # the pool of 8 less 2 reserved: one turn always, five more while nothing else runs
    assert (two.at_once, two.spare, two.width, two.timeout) == (1, 5, 2, 30)
    assert (_capacity(8).at_once, _capacity(8).spare, _capacity(8).width) == (4, 2, 2)
    assert _capacity(1).at_once == 1  # one at least
    big = _capacity(64, pool_max_size=8, map_reserve_connections=2, map_concurrency=16, map_timeout_seconds=7)
    assert (big.at_once, big.spare, big.width, big.timeout) == (6, 0, 6, 7)  # the pool less its reserve
    fixed = _capacity(2, map_process_concurrency=5, pool_max_size=8)
    assert (fixed.at_once, fixed.spare) == (5, 0)  # set: exactly that many
    assert _capacity(2, map_process_concurrency=5, pool_max_size=2, map_reserve_connections=5).at_once == 1


def test_spare_turns_only_while_no_other_request_is_in_flight() -> None:
    requests = InFlight()
    capacity = MapCapacity(at_once=1, spare=1, width=2, timeout=1, busy=requests)
    now = time.monotonic
    with requests.counting(), capacity.maps.counting(), capacity.turn(now()) as first:
        assert first
        with capacity.turn(now()) as second:
            assert second  # only the map's own request is in flight: the spare turn
        with requests.counting(), capacity.turn(now()) as third:
            assert not third  # another request came: the map waits for its one turn


def test_a_connection_is_waited_for_until_the_deadline_only() -> None:
    capacity = MapCapacity(at_once=1, spare=0, width=1, timeout=1)
    released = threading.Event()
    held = threading.Event()

    def hold() -> None:
        with capacity.turn(time.monotonic() + 60) as had:
            assert had
            held.set()
            released.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(60)
    with capacity.turn(time.monotonic()) as had:  # the deadline has come: no wait
        assert not had
    released.set()
    holder.join(60)
    with capacity.turn(time.monotonic()) as had:  # given back
        assert had


def _waiting_for(capacity: MapCapacity, wanted: dict[str, int]) -> None:
    """Until the callers wait for these turns (the threads have reached the capacity)."""
    for _ in range(6000):
        if capacity.waiting() == wanted:
            return
        time.sleep(0.01)
    raise AssertionError(f"waiting {capacity.waiting()}, not {wanted}")


def test_a_free_turn_goes_to_the_waiting_caller_holding_fewest() -> None:
    """One caller's maps hold the one turn and wait for more; another caller's map comes last and is served
    next, then turns alternate while both wait."""
    capacity = MapCapacity(at_once=1, spare=0, width=1, timeout=60)
    deadline = time.monotonic() + 600
    order: list[str] = []
    release = {name: threading.Event() for name in ("a1", "a2", "a3", "b1", "b2")}

    def work(name: str) -> None:
        with capacity.turn(deadline, name[0]) as had:
            assert had
            order.append(name)
            release[name].wait(600)

    threads = {name: threading.Thread(target=work, args=(name,)) for name in release}
    threads["a1"].start()
    _waiting_for(capacity, {})
    while capacity.held() != 1:
        time.sleep(0.01)
    threads["a2"].start()
    threads["a3"].start()
    _waiting_for(capacity, {"a": 2})
    threads["b1"].start()
    threads["b2"].start()
    _waiting_for(capacity, {"a": 2, "b": 2})
    for i in range(len(release)):  # each turn given back, one after another, in the order they were had
        while len(order) <= i:
            time.sleep(0.01)
        release[order[i]].set()
        threads[order[i]].join(600)
    assert [name[0] for name in order] == ["a", "b", "a", "b", "a"]  # which of a caller's maps: either
    assert capacity.held() == 0 and capacity.waiting() == {}


def test_a_caller_alone_takes_every_free_turn() -> None:
    capacity = MapCapacity(at_once=3, spare=0, width=3, timeout=60)
    deadline = time.monotonic() + 60
    with (
        capacity.turn(deadline, "a") as one,
        capacity.turn(deadline, "a") as two,
        capacity.turn(deadline, "a") as three,
    ):
        assert one and two and three and capacity.held() == 3
        with capacity.turn(time.monotonic(), "b") as other:
            assert not other  # every turn is taken: fairness shares turns as they come free, never more
    assert capacity.held() == 0


def test_a_caller_asking_again_at_once_waits_for_the_others_turn() -> None:
    """A map's search thread gives its turn back and asks for the next one at once; while another caller's
    maps wait, that next turn is theirs: the one-thread caller never takes two turns in a row."""
    capacity = MapCapacity(at_once=1, spare=0, width=1, timeout=60)
    deadline = time.monotonic() + 600
    order: list[str] = []

    def work(caller: str, turns: int) -> None:
        for _ in range(turns):
            with capacity.turn(deadline, caller) as had:
                assert had
                order.append(caller)
                time.sleep(0.001)  # some work: the others queue meanwhile (no time is asserted)

    flood = [threading.Thread(target=work, args=("a", 200)) for _ in range(4)]
    for thread in flood:
        thread.start()
    _waiting_for_some(capacity, "a")
    other = threading.Thread(target=work, args=("b", 12))
    other.start()
    other.join(600)
    for thread in flood:
        thread.join(600)
    taken = "".join(order)
    within = taken[taken.index("b") : taken.rindex("b") + 1]
    assert within.count("b") == 12 and "bb" not in within, within


def _waiting_for_some(capacity: MapCapacity, caller: str) -> None:
    for _ in range(6000):
        if capacity.waiting().get(caller, 0) >= 2:
            return
        time.sleep(0.001)
    raise AssertionError("the flood never waited")
