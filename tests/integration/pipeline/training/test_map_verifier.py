"""The map's verifier trained on a real store (pipeline/training/verifier.py): a few ATT&CK technique families and
their procedure examples embedded with the int8 general model as the sentence model (the store of
tests/integration/serving/test_map_held.py), candidates with each example's own actor left out, the behaviour gate
against the group's and the families' other text, its figures, and its file read back as the API reads it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pipeline.training.examples import read_labelled
from pipeline.training.verifier import GATE_FIGURE, VerifierConfig, train_verifier
from pipeline.training.verifier_data import example_candidates, read_held
from secrag.db import database
from secrag.files.package_data import sql_dir
from secrag.mapping.candidates import HeldAttack
from secrag.mapping.verifier import read_verifier
from serving.search.encoder import shared_encoder
from tests.integration.serving.test_map_held import SENTENCE_MODEL, attack_db_url  # noqa: F401 - its fixture

SQL = sql_dir()
CONFIG = VerifierConfig(voters=10, top=3, holdout=3, max_examples=400, negatives=300, per_source=100)


def test_an_example_never_votes_for_itself_nor_its_actor(attack_db_url: str) -> None:  # noqa: F811
    with database.connect(attack_db_url, autocommit=True) as conn:
        data = read_labelled(conn, SQL, holdout=3)
        procedures, attack = read_held(conn, SQL, SENTENCE_MODEL)
    held = HeldAttack.of([procedures], [attack])
    examples = list(data.train[:40])
    rows = {d: i for i, d in enumerate(procedures.doc_ids)}
    vectors = held.examples[[rows[e.doc_id] for e in examples]]  # each example's own stored vector
    found = example_candidates(vectors, examples, procedures, held, voters=5, top=3)
    for example, cands in zip(examples, found, strict=True):
        others = [i for i, actor in enumerate(procedures.actors) if actor != example.actor]
        best_other = float(np.max(held.examples[others] @ vectors[examples.index(example)]))
        # its own vector (similarity 1) is excluded: the best example similarity is another actor's
        assert all(c.example_sim <= best_other + 1e-6 for c in cands)


def test_the_verifier_is_trained_validated_and_kept_when_it_passes(attack_db_url: str, tmp_path: Path) -> None:  # noqa: F811
    encoder = shared_encoder(SENTENCE_MODEL).embedder
    with database.connect(attack_db_url, autocommit=True) as conn:
        outcome = train_verifier(conn, SQL, tmp_path, SENTENCE_MODEL, encoder, CONFIG)
    figures = outcome.figures
    assert figures["validation_examples"] > 0
    assert 0.0 <= figures[GATE_FIGURE] <= figures["reachable"] <= 1.0 and 0.0 <= figures["vote_p1"] <= 1.0
    assert figures["gate_kept_examples"] >= 0.9  # the gate lets through the share of examples it was set to
    assert figures["gate_negatives"] > 0 and 0.0 <= figures["gate_set_aside_negatives"] <= 1.0
    assert outcome.passed == (figures[GATE_FIGURE] >= figures["vote_p1"] + 0.005)
    kept = read_verifier(tmp_path)
    if outcome.passed:
        assert kept is not None and kept.model == SENTENCE_MODEL and kept.gate is not None
        assert kept.figures[GATE_FIGURE] == figures[GATE_FIGURE]
    else:
        assert kept is None and outcome.written is None
