"""Whether a sentence describes a behaviour at all: a logistic model over the sentence model's vector of the sentence
and a few marks of its surface (digits, hex runs, URLs, paths), trained on ATT&CK's procedure examples as
positives and the store's text that describes no procedure as negatives (groups' and software's narrative, CVE
descriptions, reference lines; pipeline/training/behaviour_data.py). A sentence under `threshold` is set aside
before its candidates are verified."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_HEX = re.compile(r"\b[0-9a-fA-F]{32,}\b")
_URL = re.compile(r"(?:hxxps?|https?|ftp)\[?:\]?//|\[\.\]|\bwww\.", re.IGNORECASE)
_PATH = re.compile(r"[A-Za-z]:\\|(?:^|\s)/(?:[\w.-]+/)+|\\\\")
_YEAR = re.compile(r"\((?:19|20)\d\d\)|\b(?:19|20)\d\d, \w+ \d")
SURFACE = ("digits", "symbols", "hex", "url", "path", "citation", "words")


def surface(text: str) -> list[float]:
    """The marks of a text that no embedding of its words shows well, as numbers (SURFACE's order)."""
    n = max(1, len(text))
    return [
        sum(ch.isdigit() for ch in text) / n,
        sum(not (ch.isalnum() or ch.isspace()) for ch in text) / n,
        float(bool(_HEX.search(text))),
        float(bool(_URL.search(text))),
        float(bool(_PATH.search(text))),
        float(bool(_YEAR.search(text))),
        math.log1p(len(text.split())) / 5.0,
    ]


def surface_matrix(texts: Sequence[str]) -> np.ndarray:
    return np.asarray([surface(t) for t in texts], dtype=np.float64).reshape(len(texts), len(SURFACE))


@dataclass(frozen=True)
class BehaviourGate:
    """A logistic model over [vector, surface]; sentences scoring under `threshold` describe no behaviour."""

    coef: np.ndarray  # dims + len(SURFACE)
    intercept: float
    threshold: float

    def scores(self, vectors: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """Each sentence's probability of describing a behaviour (unit rows `vectors`, one per text)."""
        if not len(texts):
            return np.zeros(0)
        x = np.hstack([np.asarray(vectors, dtype=np.float64), surface_matrix(texts)])
        z = np.clip(x @ self.coef + self.intercept, -50.0, 50.0)
        return np.asarray(1.0 / (1.0 + np.exp(-z)))

    def as_json(self) -> dict[str, Any]:
        return {
            "coef": [round(float(v), 6) for v in self.coef],
            "intercept": float(self.intercept),
            "threshold": float(self.threshold),
            "surface": list(SURFACE),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BehaviourGate:
        if list(data.get("surface") or []) != list(SURFACE):
            raise ValueError(f"the behaviour gate's surface features {data.get('surface')} are not {list(SURFACE)}")
        threshold = float(data["threshold"])
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"the behaviour gate's threshold {threshold} is not within 0..1")
        return cls(np.asarray(data["coef"], dtype=np.float64), float(data["intercept"]), threshold)
