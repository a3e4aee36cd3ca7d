"""The legs' weights in one search's fusion: the request's or its query shape's (search.yaml), and the label
and voter legs'."""

from __future__ import annotations

import dataclasses
from typing import Any

from serving.contract.query_classes import PROSE_SHAPES
from serving.contract.requests import SearchRequest
from serving.search import analysis as logic
from serving.search import spelling
from serving.search.parameters import voter_params
from serving.search.search_file import SearchConfig
from serving.search.technique_names import TechniqueNames

# The label leg's weight in the fusion, beside full text and vectors at 1.0 (serving/search/technique_names.py).
LABEL_WEIGHT = 1.0


def weights(req: SearchRequest, analysis: logic.QueryAnalysis, config: SearchConfig) -> tuple[float, float, float]:
    """w_fts, w_vec and w_fuzzy: the request's, or for a hybrid search the query shape's from
    search.yaml (`class_weights`) where the request does not set them."""
    if req.mode != "hybrid":
        return req.w_fts, req.w_vec, req.w_fuzzy
    chosen = config.weights(analysis.query_type)

    def pick(name: str, configured: float | None) -> float:
        return float(getattr(req, name)) if name in req.model_fields_set or configured is None else configured

    return pick("w_fts", chosen.fts), pick("w_vec", chosen.vec), pick("w_fuzzy", chosen.fuzzy)


def label(
    req: SearchRequest,
    analysis: logic.QueryAnalysis,
    plan: logic.Plan,
    params: dict[str, Any],
    fixes: dict[str, str],
    names: TechniqueNames,
    config: SearchConfig,
    *,
    then_vec: bool,
) -> logic.Plan:
    """The techniques a hybrid query names in full (after spelling correction) for the label leg, and
    the voter legs (techniques of the query's nearest documents, and of its nearest procedure examples)
    for every hybrid text query."""
    params["label_ids"] = []
    params["label_candidates"] = config.label_candidates
    voters = {"neighbours": config.neighbours, "procedures": config.procedures}  # search.yaml
    params |= voter_params(req.filters, voters)
    if req.mode != "hybrid" or then_vec or analysis.query_type not in {"keyword", *PROSE_SHAPES}:
        return plan
    ids = names.find(spelling.apply(req.query, fixes))
    chosen = config.weights(analysis.query_type)
    # A query that names a technique is of the technique-name class whatever its shape: it says
    # which technique it means, so its voters keep the default weights.
    neighbours = voters["neighbours"].weight if ids or chosen.neighbours is None else chosen.neighbours
    procedures = voters["procedures"].weight if ids or chosen.procedures is None else chosen.procedures
    running = {"neighbours": neighbours, "procedures": procedures}  # a leg weighted 0 does not run
    plan = dataclasses.replace(
        plan,
        w_neighbours=neighbours if plan.vec_k else 0.0,
        w_procedures=procedures if plan.vec_k else 0.0,
        scored=tuple(
            (leg, w)
            for leg, w in sorted(chosen.scored.items())
            if plan.vec_k and running[leg] and not ids and analysis.report_sentence
        ),
    )
    if not ids:
        return plan
    params["label_ids"] = list(ids)
    return dataclasses.replace(plan, w_label=LABEL_WEIGHT if chosen.label is None else chosen.label)
