"""The routes' dependencies run on the event loop (no thread-pool hop each), except those that may read the store."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
import threading
from collections.abc import Callable, Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from serving.api import deps, routes
from serving.api.routes.plans import get_plans

# May read the store (tuned thresholds every few seconds): FastAPI runs these in its thread pool.
IN_THREADS = {get_plans}


def dependency_calls(dependant: Dependant) -> Iterator[Callable[..., Any]]:
    for sub in dependant.dependencies:
        if sub.call is not None:
            yield sub.call
        yield from dependency_calls(sub)


def runs_on_the_loop(call: Callable[..., Any]) -> bool:
    """What FastAPI awaits on the event loop: coroutine and async generator functions, and security schemes
    (objects with an async __call__)."""
    target = call if inspect.isfunction(call) else getattr(call, "__call__", call)  # noqa: B004
    return inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target)


def test_every_route_dependency_runs_on_the_event_loop() -> None:
    seen: set[Callable[..., Any]] = {deps.request_slot}  # app.py adds it to every /v1 router
    for info in pkgutil.iter_modules(routes.__path__):
        router = importlib.import_module(f"{routes.__name__}.{info.name}").router
        for route in router.routes:
            if isinstance(route, APIRoute):
                seen.update(dependency_calls(route.dependant))
    assert deps.get_caller in seen and deps.get_searcher in seen
    in_threads = {call for call in seen if not runs_on_the_loop(call)}
    assert in_threads == IN_THREADS, "a plain def dependency costs a thread-pool hop per request"


class Model:
    """A serving model whose look at the active model is due or not, counting the looks and their threads."""

    def __init__(self, due: bool) -> None:
        self.due, self.looks, self.threads = due, 0, set[str]()
        self.searcher = object()

    def follow_due(self) -> bool:
        return self.due

    def follow(self) -> None:
        self.looks += 1
        self.threads.add(threading.current_thread().name)


def test_the_searcher_looks_at_the_active_model_in_a_thread_only_when_due() -> None:
    idle, due = Model(due=False), Model(due=True)
    assert asyncio.run(deps.get_searcher(idle)) is idle.searcher  # type: ignore[arg-type]
    assert idle.looks == 0
    assert asyncio.run(deps.get_searcher(due)) is due.searcher  # type: ignore[arg-type]
    assert due.looks == 1 and threading.main_thread().name not in due.threads


def test_every_route_that_reads_or_computes_runs_in_the_thread_pool() -> None:
    """Route functions are plain `def`: FastAPI runs them in its thread pool, so a map's splitting, encoding
    and voting (or any read of the store) never holds the event loop that answers /healthz."""
    for info in pkgutil.iter_modules(routes.__path__):
        router = importlib.import_module(f"{routes.__name__}.{info.name}").router
        for route in router.routes:
            if isinstance(route, APIRoute):
                assert not inspect.iscoroutinefunction(route.endpoint), f"{route.path} runs on the event loop"
