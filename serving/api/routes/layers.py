"""POST /v1/layers/compare."""

from __future__ import annotations

from fastapi import APIRouter

from serving.api.deps import LayersDep
from serving.api.routes import API_PREFIX
from serving.contract.layer_models import CompareRequest, CompareResponse
from serving.layers import compare

router = APIRouter(prefix=API_PREFIX, tags=["layers"])


@router.post(
    "/layers/compare",
    response_model=CompareResponse,
    description=(
        "Two ATT&CK Navigator layers (format 4.5, or 4.4 which tools still write) compared as technique sets: "
        "the left minus the right, their union or their intersection, returned as a layer (format 4.5) in their "
        "domain. A layer's technique set is its enabled entries (at least `left_min_score` / `right_min_score` "
        "when given) of techniques the store's ATT&CK has and has neither revoked nor deprecated; the others are "
        "reported per layer, never an error. Each technique of the result keeps a score (`scores`: the left's, "
        "the right's, their max, min or sum; minus keeps the left's) and a comment saying which layers it is in, "
        "with their scores and comments, cut at 1,000 characters, and one entry per tactic its layers placed it "
        "under. E.g. an actor's techniques that none of my rules detect: its coverage layer (POST /v1/coverage "
        "with `actor`) minus a layer of my rules, with `right_min_score: 1` when the rule layer lists undetected "
        "techniques with score 0; a rule tagged with a revoked id subtracts nothing (it needs the new id)."
    ),
)
def compare_layers(body: CompareRequest, layers: LayersDep) -> CompareResponse:
    return compare.compare_layers(layers, body)
