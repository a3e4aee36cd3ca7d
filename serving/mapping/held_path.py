"""The map's sentence-model path: every sentence encoded in batches by the sentence model, its candidates taken
from that model's vectors of ATT&CK held in the API's memory (secrag/mapping/candidates.py), scored by the selector
(serving/mapping/selector.py) or by the verifier trained beside the sentence model (secrag/mapping/verifier.py,
search.yaml `map.verify`), and the cited chunks read in one statement. Used while a sentence model serves and
its vectors are held; otherwise (None) the map searches each sentence."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from secrag.mapping.candidates import Candidate, HeldAttack, candidates
from serving.access.keys import Principal
from serving.contract.responses import LegScores, SearchResult
from serving.mapping.evidence import Vote, named_techniques
from serving.mapping.selector import probability
from serving.mapping.sentences import Sentence
from serving.mapping.verifier_file import verifier_of
from serving.search.leg_runs import fetch
from serving.search.result_rows import location_of
from serving.search.search_file import MapSelector
from serving.search.searcher import Searcher
from serving.search.source_vectors import Held

PROCEDURES = "mitre_attack_procedures"
ATTACK = "mitre_attack"

Turn = Callable[[], AbstractContextManager[bool]]  # a turn of the process's map work (MapCapacity.turn)


@dataclass(frozen=True)
class HeldEvidence:
    """Each sentence's candidates and its vector of the sentence model, with that model's id."""

    model_id: str
    candidates: list[list[Candidate]]
    vectors: np.ndarray


@dataclass(frozen=True)
class HeldVotes:
    """The sentences' votes, and which sentences the behaviour gate set aside (their indices)."""

    votes: list[Vote]
    set_aside: frozenset[int]


def held_votes(
    searcher: Searcher,
    sentences: Sequence[Sentence],
    selector: MapSelector,
    principal: Principal,
    turn: Turn,
    deadline: float,
    *,
    verify: bool = False,
) -> HeldVotes | None:
    """Every sentence's votes: its candidates at or over the selector's floor, each voting its probability (the
    verifier's, with `verify` and a verifier kept beside the sentence model; else the selector's); None when no
    sentence model serves or its vectors are not held yet (the caller searches each sentence). A sentence the
    verifier's behaviour gate finds no behaviour in is set aside, unless it writes a technique's id. Its
    statements take turns as its encoding does, so they stay on the maps' share of the connections."""
    found = held_evidence(searcher, sentences, voters=selector.voters, top=selector.top, turn=turn, deadline=deadline)
    if found is None:
        return None
    verifier = verifier_of(found.model_id) if verify else None
    aside: frozenset[int] = frozenset()
    if verifier is not None and verifier.gate is not None and sentences:
        behaviour = verifier.gate.scores(found.vectors, [s.query for s in sentences])
        aside = frozenset(
            i
            for i, p in enumerate(behaviour)
            if p < verifier.gate.threshold and not any(c.named for c in found.candidates[i])
        )
    scored: dict[int, list[tuple[Candidate, float]]] = {}
    for i, sentence_candidates in enumerate(found.candidates):
        if i in aside or not sentence_candidates:
            continue
        probs = (
            verifier.scores(sentence_candidates)
            if verifier is not None
            else [probability(c, selector.intercept, selector.weights) for c in sentence_candidates]
        )
        for candidate, p in zip(sentence_candidates, probs, strict=True):
            if p >= selector.floor:
                scored.setdefault(i, []).append((candidate, float(p)))
    with turn() as had:  # its one statement on a connection of the maps' share, as a search's
        if not had:
            return None
        hits = _hits(searcher, principal, sorted({c.chunk_id for picked in scored.values() for c, _ in picked}))
    votes: list[Vote] = []
    for i, picked in sorted(scored.items()):
        picked.sort(key=lambda cp: (-cp[1], cp[0].technique))
        for rank, (candidate, p) in enumerate(picked, start=1):
            hit = hits.get(candidate.chunk_id)
            if hit is not None:  # a document the caller may not see does not vote
                votes.append(Vote(i, candidate.technique, round(p, 6), rank, hit.model_copy(update={"score": p})))
    return HeldVotes(votes, aside)


def held_evidence(
    searcher: Searcher,
    sentences: Sequence[Sentence],
    *,
    voters: int,
    top: int,
    turn: Turn | None = None,
    deadline: float = float("inf"),
) -> HeldEvidence | None:
    """Each sentence's candidates from the sentence model's held vectors, and its vector; None when no sentence
    model serves, its vectors are not held yet, or the deadline came before every sentence was encoded."""
    model = searcher.sentence.encoder() if searcher.sentence is not None else None
    if model is None or searcher.vectors is None:
        return None
    with turn() if turn is not None else nullcontext(True) as had:
        if not had:
            return None
        with searcher.pool.connection() as conn:
            versions = searcher.catalog.source_versions(conn)
    procedures = searcher.vectors.held(model.model_id, [PROCEDURES], versions, model.dimensions)
    attack = searcher.vectors.held(model.model_id, [ATTACK], versions, model.dimensions)
    if procedures is None or attack is None:
        return None
    texts = [s.query for s in sentences]
    rows: list[np.ndarray] = []
    for start in range(0, len(texts), model.max_batch):
        with turn() if turn is not None else nullcontext(True) as had:
            if not had or time.monotonic() >= deadline:
                return None
            rows.extend(model.encode_many(texts[start : start + model.max_batch]))
    names = searcher.catalog.technique_names()
    vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
    with searcher.vectors.one_blas_thread():  # as a search's products: more threads only contend for the cores
        found = candidates(
            vectors,
            held_attack(model.model_id, procedures, attack),
            voters=voters,
            top=top,
            named=[named_techniques(s.text) for s in sentences],
            names_found=[frozenset(names.find(s.text)) for s in sentences],
        )
    return HeldEvidence(model.model_id, found, vectors)


_LAST: dict[tuple[str, tuple[str, ...]], HeldAttack] = {}
_LAST_LOCK = threading.Lock()


def held_attack(model_id: str, procedures: Sequence[Held], attack: Sequence[Held]) -> HeldAttack:
    """The held vectors grouped for the votes, made once per model and version of the sources (the last kept)."""
    key = (model_id, tuple(h.version for h in (*procedures, *attack)))
    with _LAST_LOCK:
        found = _LAST.get(key)
    if found is None:
        found = HeldAttack.of(procedures, attack)
        with _LAST_LOCK:
            _LAST.clear()
            _LAST[key] = found
    return found


def _hits(searcher: Searcher, principal: Principal, chunk_ids: list[str]) -> dict[str, SearchResult]:
    """The cited chunks as search results (display fields and location), in one statement."""
    if not chunk_ids:
        return {}
    with searcher.pool.connection() as conn:
        rows = fetch(conn, searcher.statements.map_chunks, {"ids": chunk_ids, **principal.params()}, "map:chunks")
    return {
        r["chunk_id"]: SearchResult(
            doc_id=r["doc_id"],
            chunk_id=r["chunk_id"],
            source=r["source"],
            title=r["title"],
            url=r["url"],
            score=0.0,
            exact=False,
            scores=LegScores(),
            techniques=list(r["techniques"] or ()),
            platforms=list(r["platforms"] or ()),
            location=location_of(r),
        )
        for r in rows
    }
