"""POST /v1/map's implementation: split the text into sentences, search each among the ATT&CK technique documents
with the search the API serves (the caller's access applies: a private folder's documents vote in the
neighbours leg for their own callers only), combine each technique's votes, cite and lay out the techniques."""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, cast

from numpy.typing import NDArray

from secrag.attack_domains import DEFAULT_DOMAIN, TECHNIQUE_SOURCES
from serving.access.keys import Principal
from serving.access.request_limits import RequestLimits
from serving.contract.errors import NotFound, public_error
from serving.contract.map_models import (
    UNANSWERED_REASONS,
    MappedTechnique,
    MapRequest,
    MapResponse,
    SupportingSentence,
    UnansweredReason,
    UnansweredSentence,
)
from serving.contract.plan_models import Citation, Passage
from serving.contract.requests import AttackDomain, ReturnOptions, SearchFilters, SearchRequest
from serving.contract.responses import SearchResponse
from serving.layers.screen import LayerReads, asked_domain
from serving.mapping.capacity import PROCESS, MapCapacity
from serving.mapping.decision import decide
from serving.mapping.evidence import Evidence, Vote, combine, named_techniques, votes_of
from serving.mapping.held_path import Turn, held_votes
from serving.mapping.layer import navigator_layer
from serving.mapping.sentences import Sentence, split
from serving.mapping.stoppable import OutOfTime, Stoppable
from serving.search.searcher import Searcher

log = logging.getLogger(__name__)


# A map's admission by its caller's quotas (serving/access/quotas.py Gate.searches): given the searches it will
# run and the most it would run at once, charges them and yields how many it may run at once.
Admission = Callable[[int, int], AbstractContextManager[int]]


def _unlimited(_count: int, width: int) -> AbstractContextManager[int]:
    return nullcontext(width)


@dataclass(frozen=True)
class _Answers:
    """Each query's search response, or why it has none."""

    found: dict[str, SearchResponse]
    failed: dict[str, UnansweredReason]


def map_text(
    searcher: Searcher,
    limits: RequestLimits,
    capacity: MapCapacity,
    req: MapRequest,
    principal: Principal,
    admit: Admission = _unlimited,
    caller: str = PROCESS,
) -> MapResponse:
    """The techniques the text describes, best first, at or over min_score, at most `limit` of them. The map
    runs within capacity's deadline, its turns of work shared fairly with other callers' maps (`caller`: its
    quota bucket, serving/access/quotas.py); a sentence whose search failed or did not run in time is reported
    in `unanswered` and the others still count. With a technique_layer only its techniques are kept (each
    scored on the same votes, ranks among all ATT&CK techniques)."""
    started = time.perf_counter()
    deadline = time.monotonic() + capacity.timeout
    limits.check_map(req)
    if req.technique_layer is not None:  # the layer's domain, unless the request names one
        given = req.domain if "domain" in req.model_fields_set else None
        req = req.model_copy(update={"domain": asked_domain(req.technique_layer, given)})
    source = TECHNIQUE_SOURCES[req.domain]  # the domain's technique documents are the candidates
    if req.domain != DEFAULT_DOMAIN and source not in searcher.catalog.source_facts():
        raise NotFound(f"the store holds no ATT&CK {req.domain} techniques ({source} is not published)")
    within = (
        LayerReads(searcher.catalog, limits).technique_set(req.technique_layer, "technique_layer")
        if req.technique_layer is not None
        else None
    )
    sentences = split(req.text)
    limits.check_sentences(len(sentences))
    tuning = searcher.config.map
    queries = list(dict.fromkeys(s.query for s in sentences))  # a repeated sentence is searched once
    held = None
    answers = _Answers({}, {})
    with admit(len(queries), capacity.width) as width, capacity.maps.counting():
        if tuning.selector is not None and req.domain == DEFAULT_DOMAIN:  # the sentence model's are Enterprise's
            held = held_votes(
                searcher,
                sentences,
                tuning.selector,
                principal,
                lambda: capacity.turn(deadline, caller),
                deadline,
                verify=tuning.verify,
            )
        if held is None:
            turn = functools.partial(capacity.turn, deadline, caller)
            answers = _search_all(searcher, queries, tuning.candidates, width, principal, turn, deadline, req.domain)
    votes = (
        held.votes
        if held is not None
        else [
            vote
            for i, sentence in enumerate(sentences)
            if sentence.query in answers.found
            for vote in votes_of(
                i, answers.found[sentence.query].results, tuning.rank_precision, named_techniques(sentence.text)
            )
        ]
    )
    min_score = tuning.min_score if req.min_score is None else req.min_score
    combined = combine(votes)
    if held is not None and tuning.decision is not None:
        examples = searcher.catalog.technique_examples()
        combined = decide(combined, len(sentences), tuning.decision.intercept, tuning.decision.weights, examples)
    kept = [
        e for e in combined if e.score >= min_score and (within is None or e.technique in within.techniques.techniques)
    ]
    names = searcher.catalog.technique_lookup()
    tactics = searcher.catalog.technique_tactics()
    facts = searcher.catalog.source_facts().get(source)
    version = facts.version if facts else None
    techniques = [
        _technique(e, number, sentences, names, tactics, version, req.domain)
        for number, e in enumerate(kept[: req.limit], start=1)
    ]
    model = searcher.encoder.model_id
    if held is not None and searcher.sentence is not None and (encoder := searcher.sentence.encoder()) is not None:
        model = encoder.model_id
    layer = (
        navigator_layer(
            techniques, sentences=len(sentences), min_score=min_score, model=model, source_version=version
        ).model_copy(update={"domain": f"{req.domain}-attack"})
        if req.layer
        else None
    )
    unanswered = [
        UnansweredSentence(start=s.start, end=s.end, reason=answers.failed[s.query])
        for s in sentences
        if s.query in answers.failed
    ]
    if unanswered:
        log.warning(
            "map answered without some sentences",
            extra={"sentences": len(sentences), "unanswered": len(unanswered), "reasons": _counts(unanswered)},
        )
    return MapResponse(
        techniques=techniques,
        sentences=len(sentences),
        set_aside=len(held.set_aside) if held is not None else 0,
        min_score=min_score,
        omitted=max(0, len(kept) - req.limit),
        model=model,
        layer=layer,
        technique_layer=within.report if within is not None else None,
        unanswered=unanswered,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _counts(unanswered: Sequence[UnansweredSentence]) -> str:
    reasons = Counter(u.reason for u in unanswered)
    return ",".join(f"{reason}:{count}" for reason, count in sorted(reasons.items()))


def _filters(domain: AttackDomain) -> SearchFilters:
    """A sentence's search: the domain's technique documents; beyond Enterprise, that domain's procedure examples
    vote too (an Enterprise map searches exactly as before domains were known)."""
    source = TECHNIQUE_SOURCES[domain]
    if domain == DEFAULT_DOMAIN:
        return SearchFilters(sources=[source])
    return SearchFilters(sources=[source], domains=[domain])


def _search_all(
    searcher: Searcher,
    queries: Sequence[str],
    candidates: int,
    width: int,
    principal: Principal,
    turn: Turn,
    deadline: float,
    domain: AttackDomain,
) -> _Answers:
    """One hybrid search per query among the domain's ATT&CK documents, `width` at a time. This thread encodes
    the queries a model batch at a time and hands each batch to the searches while it encodes the next; each
    batch and each search takes a turn of the process's map work (`turn`). Each search runs on one connection
    of the map's own (serving/mapping/stoppable.py), never on a second one (no side legs: the map's turns are
    all the connections its searches take). At the deadline, or when the searches end, whatever has not
    answered is given up: queued searches are cancelled, running statements are cancelled, and this returns
    once every search has given back its connection and its turn."""
    found: dict[str, SearchResponse] = {}
    failed: dict[str, UnansweredReason] = {}
    if not queries:
        return _Answers(found, failed)
    base = SearchRequest.model_validate(
        {
            "query": queries[0],
            "k": candidates,
            "filters": _filters(domain),
            "return": ReturnOptions(snippets=False),
        }
    )
    connections = Stoppable(searcher.pool, deadline)
    own = dataclasses.replace(searcher, pool=connections, side=None)
    # counted among the searches in flight, which other searches' side legs look at
    counted = searcher.side.search if searcher.side is not None else nullcontext

    def search(query: str, vector: NDArray[Any], sentence: tuple[str, NDArray[Any]] | None) -> SearchResponse:
        with turn() as had, counted():
            if not had or time.monotonic() >= deadline:
                raise OutOfTime
            request = base.model_copy(update={"query": query})
            return own.search(request, principal, vector=vector, sentence_vector=sentence)

    def encode(batch: Sequence[str]) -> list[tuple[NDArray[Any], tuple[str, NDArray[Any]] | None]] | None:
        """The batch's vectors of the serving model, and of the sentence model while one serves."""
        with turn() as had:
            if not had or time.monotonic() >= deadline:
                return None
            general = list(searcher.query_vectors(batch))
            trained = searcher.sentence_vectors(batch)
            if trained is None:
                return [(v, None) for v in general]
            return [(v, (trained.model_id, t)) for v, t in zip(general, trained.vectors, strict=True)]

    size = searcher.encoder.max_batch
    pool = ThreadPoolExecutor(max_workers=max(1, width), thread_name_prefix="map")
    searches: dict[Future[SearchResponse], str] = {}
    done: set[Future[SearchResponse]] = set()
    try:
        for start in range(0, len(queries), size):
            if time.monotonic() >= deadline:
                break
            batch = queries[start : start + size]
            vectors = encode(batch)
            if vectors is None:
                break
            for query, (vector, sentence) in zip(batch, vectors, strict=True):
                searches[pool.submit(search, query, vector, sentence)] = query
        done, _ = wait(searches, timeout=max(0.0, deadline - time.monotonic()))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # the queued searches never start
        stopped = connections.stop()  # the running statements cancelled, their connections given back
        pool.shutdown(wait=True)  # every search ended: its turn given back
    if stopped:
        log.info("map stopped at its deadline", extra={"statements": stopped})
    for future, query in searches.items():
        if future not in done:
            failed[query] = "timeout"
        elif (error := future.exception()) is not None:
            failed[query] = "timeout" if isinstance(error, OutOfTime) else _reason(error)
        else:
            found[query] = future.result()
    for query in queries:
        if query not in found and query not in failed:
            failed[query] = "timeout"  # never encoded: the deadline came first
    return _Answers(found, failed)


def _reason(error: BaseException) -> UnansweredReason:
    kind = public_error(error).kind
    return cast(UnansweredReason, kind) if kind in UNANSWERED_REASONS else "internal"


def _technique(
    evidence: Evidence,
    number: int,
    sentences: Sequence[Sentence],
    names: dict[str, str],
    tactics: dict[str, list[str]],
    source_version: str | None,
    domain: AttackDomain,
) -> MappedTechnique:
    first = evidence.votes[0].hit
    return MappedTechnique(
        technique_id=evidence.technique,
        name=names.get(evidence.technique, first.title),
        domain=domain,
        score=evidence.score,
        tactics=tactics.get(evidence.technique, []),
        sentences=[_sentence(v, sentences[v.sentence]) for v in evidence.votes],
        citations=[_citation(number, evidence.votes, source_version)],
    )


def _sentence(vote: Vote, sentence: Sentence) -> SupportingSentence:
    return SupportingSentence(
        start=sentence.start,
        end=sentence.end,
        text=sentence.text,
        rank=vote.rank,
        search_score=vote.hit.score,
        vote=vote.vote,
    )


def _citation(number: int, votes: Sequence[Vote], source_version: str | None) -> Citation:
    """The technique's document with the passages its sentences matched, in document order (as a plan cites)."""
    hits = {v.hit.chunk_id: v.hit for v in votes}
    ordered = sorted(hits.values(), key=lambda h: (h.location.char_start or 0, h.chunk_id))
    first = votes[0].hit
    return Citation(
        number=number,
        doc_id=first.doc_id,
        title=first.title,
        url=first.url,
        source=first.source,
        source_version=source_version,
        media_type=first.location.media_type,
        passages=[Passage(chunk_id=h.chunk_id, **h.location.model_dump()) for h in ordered],
    )
