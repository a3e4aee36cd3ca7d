"""POST /v1/map's implementation: split the text into sentences, search each among the ATT&CK technique documents
with the search the API serves (the caller's access applies: a private folder's documents vote in the
neighbours leg for their own callers only), combine each technique's votes, cite and lay out the techniques."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from serving.access.keys import Principal
from serving.access.request_limits import RequestLimits
from serving.contract.map_models import MappedTechnique, MapRequest, MapResponse, SupportingSentence
from serving.contract.plan_models import Citation, Passage
from serving.contract.requests import ReturnOptions, SearchFilters, SearchRequest
from serving.contract.responses import SearchResponse
from serving.mapping.evidence import ATTACK_SOURCE, Evidence, Vote, combine, named_techniques, votes_of
from serving.mapping.layer import navigator_layer
from serving.mapping.sentences import Sentence, split
from serving.search.searcher import Searcher
from serving.settings import ServingSettings


def concurrency(settings: ServingSettings) -> int:
    """The searches of one map at once: SECRAG_MAP_CONCURRENCY, never more than the pool's connections."""
    return min(settings.map_concurrency, settings.pool_max_size)


def map_text(
    searcher: Searcher, limits: RequestLimits, concurrency: int, req: MapRequest, principal: Principal
) -> MapResponse:
    """The techniques the text describes, best first, at or over min_score, at most `limit` of them."""
    started = time.perf_counter()
    limits.check_map(req)
    sentences = split(req.text)
    limits.check_sentences(len(sentences))
    tuning = searcher.config.map
    queries = list(dict.fromkeys(s.query for s in sentences))  # a repeated sentence is searched once
    answers = dict(zip(queries, _search_all(searcher, queries, tuning.candidates, concurrency, principal), strict=True))
    votes = [
        vote
        for i, sentence in enumerate(sentences)
        for vote in votes_of(i, answers[sentence.query].results, tuning.rank_precision, named_techniques(sentence.text))
    ]
    min_score = tuning.min_score if req.min_score is None else req.min_score
    kept = [e for e in combine(votes) if e.score >= min_score]
    names = searcher.catalog.technique_lookup()
    tactics = searcher.catalog.technique_tactics()
    facts = searcher.catalog.source_facts().get(ATTACK_SOURCE)
    version = facts.version if facts else None
    techniques = [
        _technique(e, number, sentences, names, tactics, version) for number, e in enumerate(kept[: req.limit], start=1)
    ]
    model = searcher.encoder.model_id
    layer = (
        navigator_layer(techniques, sentences=len(sentences), min_score=min_score, model=model, source_version=version)
        if req.layer
        else None
    )
    return MapResponse(
        techniques=techniques,
        sentences=len(sentences),
        min_score=min_score,
        omitted=max(0, len(kept) - req.limit),
        model=model,
        layer=layer,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _search_all(
    searcher: Searcher, queries: Sequence[str], candidates: int, concurrency: int, principal: Principal
) -> list[SearchResponse]:
    """One hybrid search per query among the ATT&CK documents, `concurrency` at a time (each holds one pooled
    connection). This thread encodes the queries a model batch at a time and hands each batch to the searches
    while it encodes the next, so no core waits for the encoder."""
    if not queries:
        return []
    base = SearchRequest.model_validate(
        {
            "query": queries[0],
            "k": candidates,
            "filters": SearchFilters(sources=[ATTACK_SOURCE]),
            "return": ReturnOptions(snippets=False),
        }
    )
    size = searcher.encoder.max_batch
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="map") as pool:
        searches: list[Future[SearchResponse]] = []
        for start in range(0, len(queries), size):
            batch = queries[start : start + size]
            for query, vector in zip(batch, searcher.query_vectors(batch), strict=True):
                request = base.model_copy(update={"query": query})
                searches.append(pool.submit(searcher.search, request, principal, vector=vector))
        return [search.result() for search in searches]


def _technique(
    evidence: Evidence,
    number: int,
    sentences: Sequence[Sentence],
    names: dict[str, str],
    tactics: dict[str, list[str]],
    source_version: str | None,
) -> MappedTechnique:
    first = evidence.votes[0].hit
    return MappedTechnique(
        technique_id=evidence.technique,
        name=names.get(evidence.technique, first.title),
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
