"""The map's verifier and behaviour gate (secrag/mapping/verifier.py, behaviour.py): their scores on hand-made
candidates and vectors, and their file beside a trained model, read back as written or refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from secrag.errors import ConfigError
from secrag.mapping.behaviour import SURFACE, BehaviourGate, surface
from secrag.mapping.candidates import Candidate
from secrag.mapping.verifier import FEATURES, VERIFIER_FILE, Verifier, feature_matrix, read_verifier, write_verifier

CANDIDATE = Candidate(
    technique="T1003.001",
    share=0.5,
    vote_rank=1,
    doc_sim=0.6,
    doc_rank=2,
    doc_margin=-0.1,
    share_margin=0.2,
    example_sim=0.8,
    near_sim=0.7,
    named=False,
    name_found=False,
    chunk_id="mitre_attack:T1003.001#0",
    example_margin=0.1,
    family_margin=-0.05,
    parent_margin=0.02,
)


def _verifier(gate: BehaviourGate | None = None) -> Verifier:
    n = len(FEATURES)
    coef = np.zeros(n)
    coef[FEATURES.index("example_sim")] = 2.0
    return Verifier("m-int8", FEATURES, np.zeros(n), np.ones(n), coef, -1.0, gate=gate, figures={"verifier_p1": 0.6})


def test_features_and_scores() -> None:
    x = feature_matrix([CANDIDATE])
    assert x.shape == (1, len(FEATURES))
    row = dict(zip(FEATURES, x[0], strict=True))
    assert row["example_x_doc"] == pytest.approx(0.48) and row["vote_top"] == 1.0 and row["sub_technique"] == 1.0
    assert row["margins"] == pytest.approx(-0.01)
    verifier = _verifier()
    [p] = verifier.scores([CANDIDATE])
    assert p == pytest.approx(1 / (1 + np.exp(-(2.0 * 0.8 - 1.0))))
    named = dataclasses.replace(CANDIDATE, named=True)
    assert verifier.scores([named]).tolist() == [1.0]  # a sentence writing the id verifies it
    assert verifier.scores([]).shape == (0,)


def test_the_behaviour_gate_reads_the_vector_and_the_surface() -> None:
    assert len(surface("hxxp://bad[.]example/a.exe")) == len(SURFACE)
    hashes = surface("d41d8cd98f00b204e9800998ecf8427e d41d8cd98f00b204e9800998ecf8427e")
    prose = surface("The actor used PowerShell to download a second stage.")
    assert hashes[SURFACE.index("hex")] == 1.0 and prose[SURFACE.index("hex")] == 0.0
    coef = np.zeros(2 + len(SURFACE))
    coef[0] = 4.0  # the first dimension says "behaviour"
    coef[2 + SURFACE.index("hex")] = -10.0  # a hash says otherwise
    gate = BehaviourGate(coef, -2.0, 0.5)
    vectors = np.asarray([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    texts = ["The actor used PowerShell to run it.", "d41d8cd98f00b204e9800998ecf8427e was seen", "About us."]
    scores = gate.scores(vectors, texts)
    assert scores[0] > 0.5 > scores[1] and scores[2] < 0.5


def test_the_file_is_read_back_as_written(tmp_path: Path) -> None:
    gate = BehaviourGate(np.arange(2 + len(SURFACE), dtype=np.float64) / 10, 0.5, 0.3)
    written = write_verifier(tmp_path, _verifier(gate))
    assert written == tmp_path / VERIFIER_FILE
    back = read_verifier(tmp_path)
    assert back is not None and back.model == "m-int8" and back.figures == {"verifier_p1": 0.6}
    assert back.scores([CANDIDATE]).tolist() == _verifier().scores([CANDIDATE]).tolist()
    assert back.gate is not None and back.gate.threshold == 0.3
    assert np.allclose(back.gate.coef, gate.coef)
    assert read_verifier(tmp_path / "none") is None


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        '{"format": 2, "features": []}',
        '{"format": 1, "model": "m", "features": ["nope"], "mean": [0], "scale": [1], "coef": [0], "intercept": 0}',
        '{"format": 1, "model": "m", "features": ["share"], "mean": [0], "scale": [0], "coef": [0], "intercept": 0}',
        '{"format": 1, "model": "m", "features": ["share"], "mean": [0, 1], "scale": [1], "coef": [0], "intercept": 0}',
    ],
)
def test_a_broken_file_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / VERIFIER_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="verifier"):
        read_verifier(tmp_path)
