"""The labelled data's pure parts: technique texts, the held-back actors, the split, pairs, digest and counts."""

from __future__ import annotations

from dataclasses import replace

from pipeline.training.examples import (
    DESCRIPTION_CHARS,
    Example,
    LabelledData,
    Technique,
    held_back,
    split,
    technique_text,
)
from pipeline.training.fine_tune import Pair

BODY = (
    "Tactics: Execution\n"
    "Platforms: Windows, Linux, macOS\n"
    "Adversaries may abuse command and script interpreters to execute commands, scripts, or binaries.\n\n"
    + "These interfaces and languages provide ways of interacting with computer systems. "
    * 6
)


def _example(n: int, technique: str, actor: str) -> Example:
    return Example(f"procedures:{n}", f"{actor} used {technique} ({n})", technique, actor, f"chunk {n}")


TECHNIQUES = (
    Technique("attack:T1059", "T1059", "Command and Scripting Interpreter. Adversaries ...", "chunk T1059"),
    Technique("attack:T1105", "T1105", "Ingress Tool Transfer. Adversaries ...", "chunk T1105"),
)
ACTORS = [f"G{i:04d}" for i in range(1, 41)]
EXAMPLES = [_example(n, ("T1059", "T1105")[n % 2], ACTORS[n % len(ACTORS)]) for n in range(120)]


def test_the_technique_text_is_its_name_and_the_start_of_its_description() -> None:
    text = technique_text("Command and Scripting Interpreter", BODY)
    assert text.startswith("Command and Scripting Interpreter. Adversaries may abuse command and script interpreters")
    assert "Tactics" not in text and "Platforms" not in text and "Execution" not in text
    description = text.removeprefix("Command and Scripting Interpreter. ")
    assert len(description) == DESCRIPTION_CHARS
    assert "\n" not in text and "  " not in text  # whitespace collapsed, blank lines gone


def test_only_whole_tactics_and_platforms_lines_are_left_out() -> None:
    body = "Platforms: Windows\nSome text names Tactics: in a sentence.\nTactics: Impact"
    assert technique_text("Data Destruction", body) == "Data Destruction. Some text names Tactics: in a sentence."
    assert technique_text("Short", "Tiny.") == "Short. Tiny."


def test_holding_back_is_a_fixed_function_of_the_actor() -> None:
    assert [held_back(a, 8) for a in ACTORS] == [held_back(a, 8) for a in ACTORS]
    assert all(held_back(a, 1) for a in ACTORS)  # holdout 1: every actor validates


def test_about_one_actor_in_holdout_is_held_back() -> None:
    actors = [f"G{i:04d}" for i in range(4000)] + [f"S{i:04d}" for i in range(4000)]
    for holdout in (4, 8):
        share = sum(held_back(a, holdout) for a in actors) / len(actors)
        assert abs(share - 1 / holdout) < 0.2 / holdout, (holdout, share)


def test_the_split_keeps_each_actor_whole() -> None:
    data = split(EXAMPLES, TECHNIQUES, {"mitre_attack": "v18.1"}, holdout=4)
    assert sorted(data.train + data.validation, key=lambda e: e.doc_id) == sorted(EXAMPLES, key=lambda e: e.doc_id)
    train_actors = {e.actor for e in data.train}
    validation_actors = {e.actor for e in data.validation}
    assert validation_actors and train_actors and not train_actors & validation_actors
    assert validation_actors == {a for a in ACTORS if held_back(a, 4)}
    assert [e.doc_id for e in data.train] == [e.doc_id for e in EXAMPLES if e.actor in train_actors]  # order kept
    assert data.techniques == TECHNIQUES and data.versions == {"mitre_attack": "v18.1"}


def test_pairs_join_each_training_example_to_its_techniques_text() -> None:
    orphan = _example(999, "T9999", ACTORS[0])  # a technique without a document: no pair
    data = LabelledData((EXAMPLES[0], EXAMPLES[1], orphan), (), TECHNIQUES, {})
    assert data.pairs() == [
        Pair(EXAMPLES[0].text, TECHNIQUES[0].text, "T1059"),
        Pair(EXAMPLES[1].text, TECHNIQUES[1].text, "T1105"),
    ]


def test_the_counts_name_examples_actors_and_techniques() -> None:
    data = split(EXAMPLES, TECHNIQUES, {}, holdout=4)
    assert data.counts() == {
        "train_examples": len(data.train),
        "validation_examples": len(data.validation),
        "validation_actors": len({a for a in ACTORS if held_back(a, 4)}),
        "techniques": 2,
    }
    assert data.counts()["train_examples"] + data.counts()["validation_examples"] == len(EXAMPLES)


def test_the_digest_is_the_data_and_changes_with_any_of_it() -> None:
    digest = split(EXAMPLES, TECHNIQUES, {}, holdout=4).digest()
    assert len(digest) == 64
    assert split(list(EXAMPLES), tuple(TECHNIQUES), {"mitre_attack": "other"}, holdout=4).digest() == digest
    relabelled = [replace(EXAMPLES[0], technique="T1105"), *EXAMPLES[1:]]
    assert split(relabelled, TECHNIQUES, {}, holdout=4).digest() != digest
    reworded = (replace(TECHNIQUES[0], text="Command and Scripting Interpreter. Other words"), TECHNIQUES[1])
    assert split(EXAMPLES, reworded, {}, holdout=4).digest() != digest
    assert split(EXAMPLES, TECHNIQUES, {}, holdout=5).digest() != digest  # another split
    assert split(EXAMPLES[:-1], TECHNIQUES, {}, holdout=4).digest() != digest
