"""A Navigator layer read as a technique set: its enabled entries per technique (one per tactic, or one for
every tactic), a technique's score the highest of its entries' and its comments kept with their tactics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from serving.contract.layer_models import LayerIn, LayerTechniqueIn
from serving.contract.navigator_layer import LayerDomain

DEFAULT_FORMAT = "4.5"  # a layer without `versions`: the format the Navigator writes today
Number = int | float


@dataclass(frozen=True)
class Technique:
    """One technique of a layer: its score (None: unscored), its comments and the tactics it is under (empty:
    every tactic of the technique)."""

    technique: str
    score: Number | None
    comments: tuple[str, ...]
    tactics: tuple[str, ...]


@dataclass(frozen=True)
class TechniqueSet:
    """A layer's name, domain, format and entries, its techniques by id, and those left out while reading (and the
    tactics its domain does not have, whose entries were left out)."""

    name: str
    domain: LayerDomain
    format: str
    entries: int
    techniques: Mapping[str, Technique]
    disabled: tuple[str, ...]
    below_min_score: tuple[str, ...]
    unknown_tactics: tuple[str, ...] = ()

    def ids(self) -> list[str]:
        return list(self.techniques)

    def without(self, ids: frozenset[str]) -> TechniqueSet:
        """The set less these techniques."""
        kept = {t: v for t, v in self.techniques.items() if t not in ids}
        return TechniqueSet(
            self.name,
            self.domain,
            self.format,
            self.entries,
            kept,
            self.disabled,
            self.below_min_score,
            self.unknown_tactics,
        )


def read_layer(
    layer: LayerIn, min_score: Number | None = None, tactics: AbstractSet[str] | None = None
) -> TechniqueSet:
    """The layer's technique set: enabled entries (scoring at least min_score, when given; under one of `tactics`,
    the domain's, when given and the entry names one), by technique in the order they first appear; a technique
    only disabled, or only under min_score, is listed as such, and a tactic not of `tactics` too."""
    grouped: dict[str, list[LayerTechniqueIn]] = {}
    unknown_tactics: dict[str, None] = {}
    for entry in layer.techniques:
        if tactics is not None and entry.tactic is not None and entry.tactic not in tactics:
            unknown_tactics[entry.tactic] = None
            continue
        grouped.setdefault(entry.techniqueID, []).append(entry)
    techniques: dict[str, Technique] = {}
    disabled: list[str] = []
    below: list[str] = []
    for technique_id, entries in grouped.items():
        enabled = [e for e in entries if e.enabled]
        if not enabled:
            disabled.append(technique_id)
            continue
        counted = [e for e in enabled if min_score is None or (e.score is not None and e.score >= min_score)]
        if not counted:
            below.append(technique_id)
            continue
        techniques[technique_id] = merge(technique_id, counted)
    return TechniqueSet(
        name=layer.name,
        domain=layer.domain,
        format=layer.versions.layer if layer.versions else DEFAULT_FORMAT,
        entries=len(layer.techniques),
        techniques=techniques,
        disabled=tuple(disabled),
        below_min_score=tuple(below),
        unknown_tactics=tuple(unknown_tactics),
    )


def merge(technique_id: str, entries: Sequence[LayerTechniqueIn]) -> Technique:
    """One technique of its entries: the highest score, each comment once (prefixed by its tactic when the
    entries are per tactic), the tactics named unless one entry stands for every tactic."""
    scores = [e.score for e in entries if e.score is not None]
    per_tactic = all(e.tactic for e in entries)
    tactics = tuple(dict.fromkeys(e.tactic for e in entries if e.tactic)) if per_tactic else ()
    comments: dict[str, None] = {}  # each once, in order (a dict: linear in the entries, however many repeat)
    for e in entries:
        text = e.comment.strip()
        if text:
            comments[f"[{e.tactic}] {text}" if e.tactic and len(entries) > 1 else text] = None
    return Technique(technique_id, max(scores) if scores else None, tuple(comments), tactics)
