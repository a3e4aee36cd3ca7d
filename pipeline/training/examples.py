"""The labelled examples an encoder is trained and validated on, read from the store: ATT&CK's procedure
examples (an actor's sentence about how it used a technique) and the techniques' own texts. The validation
split is carved from the same upstream data and never from ../shared/eval: the examples of held-back actors
(about one actor in `holdout` by a hash of its id), so a validated model has seen neither the sentence nor
anything else its actor did."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from pipeline.training.fine_tune import Pair
from secrag.db.queries import Queries

PROCEDURE_SOURCES = ("mitre_attack_procedures",)
TECHNIQUE_SOURCES = ("mitre_attack",)
# The technique text a sentence is trained towards: its name and the start of its description.
DESCRIPTION_CHARS = 300
_SECTION = re.compile(r"^(?:Tactics|Platforms): [^\n]*$", re.MULTILINE)


@dataclass(frozen=True)
class Example:
    """One procedure example: the sentence, its technique, its actor, and its first chunk as the store embeds it."""

    doc_id: str
    text: str
    technique: str
    actor: str
    chunk: str  # embedding_input(title, enriched_text) of its first chunk


@dataclass(frozen=True)
class Technique:
    """A technique's document: its id, the text a sentence is trained towards, and its first chunk as embedded."""

    doc_id: str
    technique: str
    text: str
    chunk: str


@dataclass(frozen=True)
class LabelledData:
    """The store's labelled examples, split by actor."""

    train: tuple[Example, ...]
    validation: tuple[Example, ...]
    techniques: tuple[Technique, ...]
    versions: dict[str, str | None]  # the read sources' versions

    def pairs(self) -> list[Pair]:
        """The training pairs: each training example with its technique's text."""
        texts = {t.technique: t.text for t in self.techniques}
        return [Pair(e.text, texts[e.technique], e.technique) for e in self.train if e.technique in texts]

    def digest(self) -> str:
        """sha256 of everything the training reads (examples, labels, split, technique texts)."""
        h = hashlib.sha256()
        for part, rows in (("train", self.train), ("validation", self.validation), ("techniques", self.techniques)):
            h.update(part.encode())
            for row in rows:
                h.update(json.dumps(row.__dict__, sort_keys=True).encode())
        return h.hexdigest()

    def counts(self) -> dict[str, int]:
        return {
            "train_examples": len(self.train),
            "validation_examples": len(self.validation),
            "validation_actors": len({e.actor for e in self.validation}),
            "techniques": len(self.techniques),
        }


def technique_text(title: str, body: str) -> str:
    """The technique's name and the first DESCRIPTION_CHARS of its description (its tactics and platforms
    lines left out)."""
    description = " ".join(_SECTION.sub("", body).split())
    return f"{title}. {description[:DESCRIPTION_CHARS]}"


def held_back(actor: str, holdout: int) -> bool:
    """Whether the actor's examples are validation ones: about one actor in `holdout`, by a hash of its id."""
    return int(hashlib.sha256(actor.encode()).hexdigest()[:8], 16) % holdout == 0


def read_labelled(conn: psycopg.Connection, sql_dir: Path, *, holdout: int = 8) -> LabelledData:
    """The store's procedure examples and technique texts, split by actor."""
    from pipeline.indexing import embedding_input

    q = Queries(sql_dir, "training")
    techniques = tuple(
        Technique(r[0], r[1], technique_text(r[2], r[3]), embedding_input(r[4], r[5]))
        for r in conn.execute(q.technique_texts, {"technique_sources": list(TECHNIQUE_SOURCES)}).fetchall()
    )
    known = {t.technique for t in techniques}
    examples = [
        Example(r[0], " ".join(str(r[2]).split()), r[3], r[4] or r[0], embedding_input(r[5], r[6]))
        for r in conn.execute(q.procedure_examples, {"procedure_sources": list(PROCEDURE_SOURCES)}).fetchall()
        if r[3] in known
    ]
    versions = {
        r[0]: r[1]
        for r in conn.execute(q.training_versions, {"sources": [*PROCEDURE_SOURCES, *TECHNIQUE_SOURCES]}).fetchall()
    }
    return split(examples, techniques, versions, holdout)


def split(
    examples: Sequence[Example], techniques: Sequence[Technique], versions: dict[str, str | None], holdout: int
) -> LabelledData:
    train = tuple(e for e in examples if not held_back(e.actor, holdout))
    validation = tuple(e for e in examples if held_back(e.actor, holdout))
    return LabelledData(train, validation, tuple(techniques), versions)
