"""What the map's verifier and behaviour gate are trained on, read from the store: the sentence model's vectors of
ATT&CK's technique documents and procedure examples held as the API holds them (secrag/mapping/candidates.py),
each example's candidates with its own actor's examples left out (so an example never votes for itself nor for
anything its actor did), and the store's text that describes no procedure, cut into sentences."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg

from pipeline.training.examples import PROCEDURE_SOURCES, TECHNIQUE_SOURCES, Example
from secrag.db.queries import Queries
from secrag.mapping.candidates import Candidate, HeldAttack, candidates

BATCH = 256  # examples whose similarities to every held row are taken at once (256 x 16,000 floats)
# The behaviour gate's negatives: ATT&CK's documents of these kinds, and whole sources of text about no procedure.
NARRATIVE_KINDS = ("group", "software", "campaign", "mitigation", "tactic", "data-source", "data-component")
NARRATIVE_SOURCES = ("mitre_attack", "cisa_kev", "loldrivers", "hijacklibs", "mitre_d3fend")
WHOLE_SOURCES = ("cisa_kev", "loldrivers", "hijacklibs", "mitre_d3fend")
_CITATION = re.compile(r"\(Citation:[^)]*\)")
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])|\n+")


@dataclass(frozen=True)
class HeldRows:
    """One source's vectors as the API holds them (secrag/mapping/candidates.py HeldRows), with each row's actor."""

    chunk_ids: list[str]
    doc_ids: list[str]
    matrix: np.ndarray
    labels: tuple[tuple[str, ...], ...]
    actors: list[str]


def clean(text: str) -> str:
    """ATT&CK's markup out of a text (citations, link targets), its whitespace single spaces."""
    return " ".join(_LINK.sub(r"\1", _CITATION.sub("", text)).split())


def read_held(conn: psycopg.Connection, sql_dir: Path, model_id: str) -> tuple[HeldRows, HeldRows]:
    """The model's vectors of the procedure examples and of the ATT&CK documents, as unit rows."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
    rows = conn.execute(
        Queries(sql_dir, "training").model_chunk_vectors,
        {"model": model_id, "sources": [*PROCEDURE_SOURCES, *TECHNIQUE_SOURCES]},
    ).fetchall()

    def held(sources: Sequence[str]) -> HeldRows:
        picked = [r for r in rows if r[0] in sources]
        matrix = np.asarray([r[3].to_numpy() for r in picked], dtype=np.float32).reshape(len(picked), -1)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return HeldRows(
            chunk_ids=[r[1] for r in picked],
            doc_ids=[r[2] for r in picked],
            matrix=matrix / norms,
            labels=tuple(tuple(r[4] or ()) for r in picked),
            actors=[r[5] or r[2] for r in picked],
        )

    return held(PROCEDURE_SOURCES), held(TECHNIQUE_SOURCES)


def example_candidates(
    vectors: np.ndarray,
    examples: Sequence[Example],
    procedures: HeldRows,
    held: HeldAttack,
    *,
    voters: int,
    top: int,
) -> list[list[Candidate]]:
    """Each example's candidates (its unit row of `vectors`), its own actor's examples left out of the vote."""
    by_actor: dict[str, list[int]] = {}
    for row, actor in enumerate(procedures.actors):
        by_actor.setdefault(actor, []).append(row)
    rows_of = {actor: np.asarray(rows, dtype=np.intp) for actor, rows in by_actor.items()}
    empty = np.zeros(0, dtype=np.intp)
    out: list[list[Candidate]] = []
    for start in range(0, len(examples), BATCH):
        part = examples[start : start + BATCH]
        out.extend(
            candidates(
                vectors[start : start + len(part)],
                held,
                voters=voters,
                top=top,
                named=[frozenset()] * len(part),
                names_found=[frozenset()] * len(part),
                exclude=[rows_of.get(e.actor, empty) for e in part],
            )
        )
    return out


def narrative_sentences(conn: psycopg.Connection, sql_dir: Path, *, per_source: int, limit: int) -> list[str]:
    """Sentences of the store's text about no procedure, at most `limit`, spread over its sources."""
    rows = conn.execute(
        Queries(sql_dir, "training").narrative_texts,
        {
            "sources": list(NARRATIVE_SOURCES),
            "kinds": list(NARRATIVE_KINDS),
            "whole_sources": list(WHOLE_SOURCES),
            "limit": per_source,
        },
    ).fetchall()
    found: list[str] = []
    for _source, _doc, body in rows:
        for line in (body or "").split("\n"):
            for piece in _SENTENCE_END.split(clean(line)):
                text = " ".join(piece.split())
                if len(text.split()) >= 3:
                    found.append(text[:600])
    found = sorted(set(found), key=_stable)
    return found[:limit]


def _stable(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def held_out(text: str, holdout: int) -> bool:
    """Whether a negative sentence is a validation one: about one in `holdout`, by a hash of its text."""
    return int(_stable(text)[:8], 16) % holdout == 0
