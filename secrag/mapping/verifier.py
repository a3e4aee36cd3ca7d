"""The map's verifier: whether a sentence describes a candidate technique, as a probability, from the candidate's
evidence in the sentence model's vectors (secrag/mapping/candidates.py) and a few of its products, by a logistic
model the pipeline trains on ATT&CK's procedure examples (pipeline/training/verifier.py), and whether the sentence
describes a behaviour at all (secrag/mapping/behaviour.py). Both are kept as JSON beside the sentence model they
were trained for, `<models dir>/trained/<id>/verifier.json`, so they are promoted, rolled back and carried by a
snapshot with it. A linear model over 20 numbers costs microseconds per candidate beside the encoder's
milliseconds per sentence: an int8 export would save nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from secrag.errors import ConfigError, ParseError
from secrag.files import safe_json
from secrag.files.safe_files import UnsafeFile, read_capped
from secrag.mapping.behaviour import BehaviourGate
from secrag.mapping.candidates import Candidate

VERIFIER_FILE = "verifier.json"
MAX_FILE_BYTES = 4 * 1024 * 1024
FORMAT = 1

_FEATURES: dict[str, Callable[[Candidate], float]] = {
    "share": lambda c: c.share,
    "share_margin": lambda c: c.share_margin,
    "example_sim": lambda c: c.example_sim,
    "example_margin": lambda c: c.example_margin,
    "near_sim": lambda c: c.near_sim,
    "doc_sim": lambda c: c.doc_sim,
    "doc_margin": lambda c: c.doc_margin,
    "family_margin": lambda c: c.family_margin,
    "parent_margin": lambda c: c.parent_margin,
    "vote_top": lambda c: 1.0 / c.vote_rank if c.vote_rank else 0.0,
    "doc_top": lambda c: 1.0 / c.doc_rank if c.doc_rank else 0.0,
    "voted": lambda c: float(c.vote_rank > 0),
    "name_found": lambda c: float(c.name_found),
    "sub_technique": lambda c: float("." in c.technique),
    "share_x_doc": lambda c: c.share * c.doc_sim,
    "example_x_doc": lambda c: c.example_sim * c.doc_sim,
    "example_x_near": lambda c: c.example_sim * c.near_sim,
    "example_sq": lambda c: c.example_sim * c.example_sim,
    "doc_sq": lambda c: c.doc_sim * c.doc_sim,
    "margins": lambda c: c.doc_margin * c.example_margin,
}
FEATURES: tuple[str, ...] = tuple(_FEATURES)


def feature_matrix(candidates: Sequence[Candidate], names: Sequence[str] = FEATURES) -> np.ndarray:
    """One row per candidate, one column per feature named."""
    if not candidates:
        return np.zeros((0, len(names)))
    return np.asarray([[_FEATURES[n](c) for n in names] for c in candidates], dtype=np.float64)


@dataclass(frozen=True)
class Verifier:
    """A logistic model over standardised features; its gate figures; the behaviour gate trained with it."""

    model: str  # the sentence model whose vectors it reads
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    gate: BehaviourGate | None = None
    figures: Mapping[str, Any] = field(default_factory=dict)

    def scores(self, candidates: Sequence[Candidate]) -> np.ndarray:
        """Each candidate's probability that the sentence describes it; 1 for a technique whose id it writes."""
        if not candidates:
            return np.zeros(0)
        x = (feature_matrix(candidates, self.features) - self.mean) / self.scale
        z = np.clip(x @ self.coef + self.intercept, -50.0, 50.0)
        p = 1.0 / (1.0 + np.exp(-z))
        return np.where([c.named for c in candidates], 1.0, p)

    def as_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "model": self.model,
            "features": list(self.features),
            "mean": [float(v) for v in self.mean],
            "scale": [float(v) for v in self.scale],
            "coef": [float(v) for v in self.coef],
            "intercept": float(self.intercept),
            "gate": self.gate.as_json() if self.gate is not None else None,
            "figures": dict(self.figures),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verifier:
        names = tuple(str(n) for n in data["features"])
        unknown = sorted(set(names) - set(FEATURES))
        if data.get("format") != FORMAT or unknown:
            raise ValueError(f"format {data.get('format')!r} or features {unknown} unknown to this version")
        arrays = [np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "coef")]
        if any(a.shape != (len(names),) for a in arrays) or not np.all(arrays[1] > 0):
            raise ValueError("mean, scale and coef need one value per feature (scale > 0)")
        gate = data.get("gate")
        return cls(
            model=str(data["model"]),
            features=names,
            mean=arrays[0],
            scale=arrays[1],
            coef=arrays[2],
            intercept=float(data["intercept"]),
            gate=BehaviourGate.from_json(gate) if gate is not None else None,
            figures=dict(data.get("figures") or {}),
        )


def write_verifier(folder: Path, verifier: Verifier) -> Path:
    """Write verifier.json into the trained model's folder, atomically."""
    import json
    import os

    path = Path(folder) / VERIFIER_FILE
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(verifier.as_json(), sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, path)
    return path


def read_verifier(folder: Path) -> Verifier | None:
    """The verifier kept in a trained model's folder; None when it has none. ConfigError when it is unreadable."""
    path = Path(folder) / VERIFIER_FILE
    if not path.exists():
        return None
    try:
        data = safe_json.load(read_capped(path, MAX_FILE_BYTES))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Verifier.from_json(data)
    except (UnsafeFile, ParseError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: cannot read the map's verifier: {exc}") from exc
