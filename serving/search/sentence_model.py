"""The sentence path's model: the encoder the pipeline trained on ATT&CK's procedure examples (pipeline/training),
promoted by its quality gate or `secrag models promote`. Its vectors exist for the ATT&CK sources only
(`SENTENCE_SOURCES`); a search of sentence shape encodes the query with it too, and the legs that read only
those sources (the procedures voter leg, the vector leg filtered to them) take their nearest chunks from its
vectors held in the API's memory (serving/search/source_vectors.py). Until they are held, and for every other
leg, the general model serves as before.

The promoted model is read every SOURCES_TTL seconds; its encoder is loaded in a background thread, so no
request waits for it: searches use it from the first one after it is loaded."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import psycopg

from serving.search.catalog import SOURCES_TTL, Cached
from serving.search.encoder import QueryEncoder
from serving.search.side_legs import usable_cores

log = logging.getLogger(__name__)

# The sources whose chunks the trained model embeds (pipeline/training/examples.py reads the same ones).
SENTENCE_SOURCES: frozenset[str] = frozenset({"mitre_attack", "mitre_attack_procedures"})
# After a failed load, the model is not loaded again for this long (the general model serves meanwhile).
RETRY_AFTER_SECONDS = 60.0


@dataclass(frozen=True)
class SentenceVectors:
    """A query's vectors of the sentence model, one per query, with the model's id."""

    model_id: str
    vectors: Sequence[np.ndarray]


@dataclass
class SentenceModel:
    """Follows the promoted sentence model (`read_promoted`: its served id, "" for none) unless one is pinned
    (`pinned`: an id, or "none" for off), and holds its encoder once loaded."""

    read_promoted: Callable[[], str]
    make_encoder: Callable[[str], QueryEncoder]
    pinned: str | None = None
    _promoted: Cached = field(default_factory=lambda: Cached(SOURCES_TTL))
    _encoder: QueryEncoder | None = None
    _loading: str | None = None
    _failed: dict[str, float] = field(default_factory=dict)  # model id -> when its load last failed (monotonic)
    _executor: ThreadPoolExecutor | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def encoder(self) -> QueryEncoder | None:
        """The sentence model's encoder when one is promoted (or pinned) and loaded, else None."""
        wanted = self._wanted()
        with self._lock:
            current = self._encoder
            if not wanted:
                self._encoder = None
                return None
            if current is not None and current.model_id == wanted:
                return current
            failed = self._failed.get(wanted)
            if self._loading != wanted and (failed is None or time.monotonic() - failed >= RETRY_AFTER_SECONDS):
                self._loading = wanted
                threading.Thread(target=self._load, args=(wanted,), name="secrag-sentence-model", daemon=True).start()
            return None  # the old model's vectors are no longer the promoted ones: the general model serves

    def load_now(self) -> QueryEncoder | None:
        """Load the wanted model in this thread (the API's warm-up), unless it is loaded or loading."""
        wanted = self._wanted()
        with self._lock:
            if not wanted or (self._encoder is not None and self._encoder.model_id == wanted):
                return self._encoder if wanted else None
            if self._loading is not None:
                return None
            self._loading = wanted
        self._load(wanted)
        return self.encoder()

    def encode_one_soon(self, query: str) -> Callable[[], tuple[str, np.ndarray] | None]:
        """The query's (model id, vector), encoded in another thread while the caller encodes it with the
        general model (one query's two encodes overlap on two cores): call the result for them."""
        encoder = self.encoder()
        if encoder is None:
            return lambda: None
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=usable_cores(), thread_name_prefix="secrag-sentence")
            future = self._executor.submit(encoder.encode, query)
        return lambda: (encoder.model_id, future.result())

    def encode(self, queries: Sequence[str]) -> SentenceVectors | None:
        """The queries' vectors of the sentence model, or None when none serves."""
        encoder = self.encoder()
        if encoder is None:
            return None
        return SentenceVectors(encoder.model_id, encoder.encode_many(list(queries)))

    def close(self) -> None:
        """Stop the encoding threads (at the API's stop)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _wanted(self) -> str:
        if self.pinned is not None:
            return "" if self.pinned == "none" else self.pinned
        try:
            return str(self._promoted.get(self.read_promoted) or "")
        except (psycopg.Error, OSError) as exc:
            log.info("cannot read the promoted sentence model", extra={"error": type(exc).__name__})
            return self._encoder.model_id if self._encoder is not None else ""

    def _load(self, model_id: str) -> None:
        try:
            encoder = self.make_encoder(model_id)
            encoder.encode_many(["warm up"])
        except Exception:  # noqa: BLE001 - the general model keeps serving; logged with its traceback
            log.exception("cannot load the sentence model %s; the general model serves sentences", model_id)
            with self._lock:
                self._loading = None
                self._failed[model_id] = time.monotonic()
            return
        with self._lock:
            if self._loading != model_id:
                return  # another model was promoted meanwhile: its own load follows
            self._encoder, self._loading = encoder, None
            self._failed.pop(model_id, None)
        log.info("sentence model %s serves the sentence path", model_id)
