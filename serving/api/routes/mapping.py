"""POST /v1/map."""

from __future__ import annotations

import functools

from fastapi import APIRouter

from serving.api.deps import CallerDep, GateDep, LimitsDep, SearcherDep, ServiceDep
from serving.api.routes import API_PREFIX
from serving.contract.error_responses import error_responses
from serving.contract.map_models import MapRequest, MapResponse
from serving.mapping import mapper

router = APIRouter(prefix=API_PREFIX, tags=["map"])


@router.post(
    "/map",
    response_model=MapResponse,
    responses=error_responses(404),  # a domain whose techniques the store does not hold
    description=(
        "The ATT&CK techniques a text describes (a sentence, a paragraph or a whole report): the text is split "
        "into sentences. For Enterprise, while a trained sentence model serves, each sentence's candidate "
        "techniques come from that model's vectors of ATT&CK's procedure examples and technique documents held in "
        "the API, each scored by the probability that the sentence describes it (`vote`), and a technique's "
        "`score` is search.yaml's `map.decision`: the probability, from its sentences' probabilities and its "
        "procedure examples in the store, that an analyst would map the text to it (a sentence that writes a "
        "technique's id is evidence at probability 1, weighed as the rest). Otherwise each sentence is searched "
        "among the domain's technique documents with the hybrid search of /v1/search (the caller's access "
        "applies), and each technique scores 1 - prod(1 - s) over "
        "the sentences that found it among their first technique documents. `min_score` cuts on `score`; "
        "`set_aside` counts the sentences found to describe no behaviour (search.yaml `map.verify`). "
        "Each technique comes with its supporting sentences "
        "(offsets into the text), the passages behind it, and an ATT&CK Navigator layer (format 4.5) of them all. "
        "Deterministic: the same text and store give the same answer, unless some sentences' searches did not "
        "answer within the map's deadline (SECRAG_MAP_TIMEOUT_SECONDS): those are listed in `unanswered`. A map "
        "counts as the searches it runs against the caller's requests a minute."
    ),
)
def map_text(
    body: MapRequest, searcher: SearcherDep, limits: LimitsDep, service: ServiceDep, gate: GateDep, caller: CallerDep
) -> MapResponse:
    return mapper.map_text(
        searcher,
        limits,
        service.map_capacity,
        body,
        caller.principal,
        admit=functools.partial(gate.searches, caller),
        caller=caller.bucket,
    )
