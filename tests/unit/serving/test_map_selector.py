"""The map's selector (serving/mapping/selector.py): a candidate's evidence as the features search.yaml's
`map.selector` weighs, and the probability a logistic model over them gives."""

from __future__ import annotations

import dataclasses
import math

import pytest

from secrag.mapping.candidates import Candidate
from serving.mapping.selector import features, probability
from serving.search.search_file import MAP_FEATURES

CANDIDATE = Candidate(
    technique="T1003.001",
    share=0.4,
    vote_rank=2,
    doc_sim=0.62,
    doc_rank=4,
    doc_margin=-0.05,
    share_margin=-0.1,
    example_sim=0.7,
    near_sim=0.55,
    named=False,
    name_found=True,
    chunk_id="mitre_attack:T1003.001#0",
)


def test_the_features_are_the_ones_the_search_file_accepts() -> None:
    assert tuple(features(CANDIDATE)) == MAP_FEATURES  # a weight search.yaml accepts is one the selector reads
    assert features(CANDIDATE) == {
        "share": 0.4,
        "share_margin": -0.1,
        "example_sim": 0.7,
        "near_sim": 0.55,
        "doc_sim": 0.62,
        "doc_margin": -0.05,
        "vote_top": 0.5,
        "doc_top": 0.25,
        "named": 0.0,
        "name_found": 1.0,
        "sub_technique": 1.0,
    }


def test_a_technique_without_a_vote_or_a_sub_technique_has_none_of_their_features() -> None:
    unvoted = dataclasses.replace(CANDIDATE, technique="T1003", vote_rank=0, share=0.0)
    values = features(unvoted)
    assert (values["vote_top"], values["sub_technique"], values["doc_top"]) == (0.0, 0.0, 0.25)


def test_the_probability_is_the_logistic_of_the_weighted_features() -> None:
    assert probability(CANDIDATE, 0.0, {}) == 0.5
    assert probability(CANDIDATE, -1.0, {"share": 2.5}) == pytest.approx(0.5)  # z = -1 + 2.5 x 0.4 = 0
    assert probability(CANDIDATE, 0.0, {"doc_top": 4.0}) == pytest.approx(1 / (1 + math.exp(-1)))


def test_it_grows_with_a_feature_of_positive_weight() -> None:
    weights = {"share": 3.0, "doc_sim": 1.0}
    ps = [probability(dataclasses.replace(CANDIDATE, share=s), -2.0, weights) for s in (0.0, 0.2, 0.5, 0.9)]
    assert ps == sorted(ps) and len(set(ps)) == len(ps)
    assert all(0.0 < p < 1.0 for p in ps)


def test_it_stays_a_probability_however_large_the_weights() -> None:
    for weight in (1e6, -1e6):  # math.exp would overflow past 709
        p = probability(CANDIDATE, 0.0, {"share": weight})
        assert 0.0 <= p <= 1.0
    assert probability(CANDIDATE, 0.0, {"share": 1e6}) > 0.999
    assert probability(CANDIDATE, 0.0, {"share": -1e6}) < 1e-6


def test_a_technique_whose_id_the_sentence_writes_is_certain() -> None:
    named = dataclasses.replace(CANDIDATE, named=True, share=0.0, vote_rank=0)
    assert probability(named, -50.0, {"share": 10.0, "doc_sim": -10.0}) == 1.0
