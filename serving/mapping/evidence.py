"""The evidence of each ATT&CK technique across a text's sentences. Every sentence votes for the first few
technique documents its search found: the k-th votes the share of labelled sentences whose k-th technique was
right (search.yaml `map.rank_precision`), and one whose id the sentence names ("... (T1059.001)") votes 1.
A technique's score combines its sentences' votes by noisy-or, 1 - prod(1 - v): each sentence is independent
evidence, so one sentence finding it first makes 0.35 and two make 0.58.

The vote is the rank's and not the search score because the score does not tell a right first technique from a
wrong one (CTI dev sentences: mean hybrid score 0.899 right, 0.886 wrong) while the rank does (0.35, 0.13, 0.10
of the first three right): bench/map.py --calibrate."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass

from secrag.attack_domains import TECHNIQUE_SOURCES
from secrag.identifiers import SUB_TECHNIQUE, TECHNIQUE, is_technique_id
from serving.contract.responses import SearchResult

# The sources whose technique documents a text is mapped to (one per ATT&CK domain; a map reads its domain's).
ATTACK_SOURCES = frozenset(TECHNIQUE_SOURCES.values())
_NAMED = re.compile(rf"(?<![\w.])(?:{SUB_TECHNIQUE}|{TECHNIQUE})(?![\w]|\.\d)")


@dataclass(frozen=True)
class Vote:
    """One sentence's vote for one technique: the technique document's hit in the sentence's search."""

    sentence: int  # index into the text's sentences
    technique: str
    vote: float
    rank: int  # 1-based among the sentence's technique documents
    hit: SearchResult


@dataclass(frozen=True)
class Evidence:
    """A technique's score and the votes behind it (one per sentence, in sentence order)."""

    technique: str
    score: float
    votes: tuple[Vote, ...]


def technique_of(hit: SearchResult) -> str | None:
    """The ATT&CK id of a technique document (mitre_attack:T1003.001, mitre_attack_mobile:T1624), else None
    (groups, software, tactics, ...)."""
    if hit.source not in ATTACK_SOURCES:
        return None
    local = hit.doc_id.removeprefix(f"{hit.source}:")
    return local if is_technique_id(local) else None


def named_techniques(text: str) -> frozenset[str]:
    """The ATT&CK ids a sentence writes out (T1059, T1059.001), as ATT&CK writes them."""
    return frozenset(_NAMED.findall(text))


def votes_of(
    sentence: int, hits: Sequence[SearchResult], rank_precision: Sequence[float], named: Set[str] = frozenset()
) -> list[Vote]:
    """The sentence's votes: one per technique document among its first len(rank_precision), best first; 1 for a
    technique whose id the sentence names (`named`)."""
    votes: list[Vote] = []
    for hit in hits:
        if len(votes) == len(rank_precision):
            break
        technique = technique_of(hit)
        if technique is None or any(v.technique == technique for v in votes):
            continue
        vote = 1.0 if technique in named else rank_precision[len(votes)]
        votes.append(Vote(sentence, technique, vote, len(votes) + 1, hit))
    return votes


def combine(votes: Iterable[Vote]) -> list[Evidence]:
    """Each technique's noisy-or score over its sentences (a sentence's best vote for it counts once), best
    first; ties by id, so the order never depends on the order of the votes."""
    best: dict[tuple[str, int], Vote] = {}
    for vote in votes:
        key = (vote.technique, vote.sentence)
        if key not in best or vote.vote > best[key].vote:
            best[key] = vote
    by_technique: dict[str, list[Vote]] = {}
    for (technique, _), vote in sorted(best.items()):
        by_technique.setdefault(technique, []).append(vote)
    found = [
        Evidence(technique, round(noisy_or(v.vote for v in votes), 6), tuple(votes))
        for technique, votes in by_technique.items()
    ]
    return sorted(found, key=lambda e: (-e.score, e.technique))


def noisy_or(scores: Iterable[float]) -> float:
    """1 - prod(1 - s): the chance that at least one of independent pieces of evidence holds."""
    return 1.0 - math.prod(1.0 - s for s in scores)
