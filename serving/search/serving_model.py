"""The serving model: the searcher of the model queries are encoded with, following the model the pipeline
activates unless one is pinned (SECRAG_SERVING_MODEL)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg

from serving.search.catalog import SOURCES_TTL, Cached
from serving.search.encoder import QueryEncoder
from serving.search.searcher import Searcher

log = logging.getLogger(__name__)


@dataclass
class ServingModel:
    """The current searcher; `searcher_for` builds one on another model's encoder (its statements composed
    for that model), `make_encoder` loads a model's encoder (None: pinned, never switched)."""

    searcher: Searcher
    searcher_for: Callable[[QueryEncoder], Searcher]
    read_active: Callable[[], str]
    make_encoder: Callable[[str], QueryEncoder] | None = None
    _active: Cached = field(default_factory=lambda: Cached(SOURCES_TTL))
    _switching: threading.Lock = field(default_factory=threading.Lock)

    def current(self) -> Searcher:
        """The searcher to serve this request with (after a look at the active model)."""
        self.follow()
        return self.searcher

    def follow_due(self) -> bool:
        """Whether `follow` would read the store (callers on the event loop then run it in a thread)."""
        return self.make_encoder is not None and self._active.due()

    def follow(self) -> None:
        """Switch to the model the pipeline activated (read every SOURCES_TTL seconds). The pipeline activates
        a model only once every chunk has its vector, so searches move from complete to complete; until the
        new encoder is loaded the old one serves."""
        if self.make_encoder is None:
            return
        try:
            active = self._active.get(self.read_active)
        except (psycopg.Error, OSError) as exc:
            log.info("cannot read the active model", extra={"error": type(exc).__name__})
            return
        serving = self.searcher.encoder.model_id
        if not active or active == serving or not self._switching.acquire(blocking=False):
            return
        try:
            encoder = self.make_encoder(active)
            log.info("serving model %s (was %s)", encoder.model_id, serving)
            self.searcher = self.searcher_for(encoder)  # one assignment: a request sees old or new
        except Exception:  # noqa: BLE001 - the old model keeps serving; logged with its traceback
            log.exception("cannot load the active model %s; still serving %s", active, serving)
        finally:
            self._switching.release()
