"""Query analysis (type, identifiers, tsquery text), search parameters and re-scoring of fused rows."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz

from secrag import identifiers
from secrag.enrichment import identifier_variants
from serving.contract.query_classes import PROSE_SHAPES
from serving.search import tsquery_text
from serving.search.search_file import SearchConfig

_ID_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    *identifiers.KINDS,
    # any other token with a digit or separator: a hash, a file name, a rule or event id
    # (the lookahead as bounded as the token, so a search over a long word is linear in its length)
    ("identifier", re.compile(r"(?=[\w.\-]{0,127}[\d._-])[A-Za-z0-9][\w.\-]{1,126}")),
)
IDENTIFIER_TYPES = frozenset(t for t, _ in _ID_PATTERNS)
_WORD = re.compile(r"[\w][\w.\-]*")
# The end of a sentence inside a query: an end mark, closing quotes or brackets, space, then a capital or an
# opening quote or bracket (so "cmd.exe /c" or "e.g. the" end nothing).
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s+(?=[A-Z\"(])")
_FUZZY_MAX_CHARS = 64
# In hybrid mode the fuzzy leg serves a typo'd name or tool ("mimikats"). For longer queries the vector
# leg already absorbs typos, and the trigram leg both cost most of the request (20-70 ms for two or three
# common words) and lowered dev-set nDCG@10 (0.608 with it up to three words, 0.613 without).
_HYBRID_FUZZY_MAX_WORDS = 1
NATURAL_MIN_WORDS = 5


@dataclass(frozen=True)
class QueryAnalysis:
    """What the query looks like and the derived texts each leg uses."""

    query_type: str
    fts_text: str  # websearch_to_tsquery('english', ...) input (serving/search/tsquery_text.py)
    ident_text: str  # websearch_to_tsquery('simple', ...) input: identifier forms ORed
    exact_forms: tuple[str, ...]  # upstream-id spellings to look up as '<source>:<id>'

    @property
    def is_identifier(self) -> bool:
        return self.query_type in IDENTIFIER_TYPES

    @property
    def report_sentence(self) -> bool:
        """One sentence in a report's register (the sentence path's and the procedures leg's)."""
        return self.query_type == "sentence"


# A sentence in the register of detection content ("Identifies ...", "Detects ...", "The following analytic
# detects ...", "A machine learning job has ..."): a pasted rule's description, not a line of a threat report.
# In the bench store, 91 % of the Sigma, 85 % of the Elastic and 99 % of the Splunk rule descriptions open so,
# and none of the 17,667 ATT&CK procedure examples (the register of threat reports).
_DETECTION_REGISTER = re.compile(
    r"(?:(?:this|the following) (?:detection )?(?:rule|search|analytics?|query|detection|correlation) "
    r"|a machine learning job )?"
    r"(?:identifies|detects?|monitors|alerts|looks for|searches for|has (?:identified|detected))\b",
    re.IGNORECASE,
)


def detection_register(query: str) -> bool:
    """Whether the text opens as a detection rule's description does: a pasted rule, of the natural shape (the
    sentence path and the procedures leg serve report sentences, and cost rule descriptions)."""
    return _DETECTION_REGISTER.match(query.strip()) is not None


def classify(query: str) -> str:
    """The query shape: an identifier kind when the whole query is one identifier, else by its words:
    keyword (fewer than NATURAL_MIN_WORDS), sentence (prose of one sentence, a line of a report) or natural
    (pasted content: several sentences, or one in a detection rule's register)."""
    text = query.strip()
    for kind, pattern in _ID_PATTERNS:
        if pattern.fullmatch(text):
            return kind
    words = _WORD.findall(text)
    if len(words) < NATURAL_MIN_WORDS:
        return "keyword"
    return "natural" if _SENTENCE_END.search(text) or detection_register(text) else "sentence"


def _exact_forms(text: str, kind: str) -> tuple[str, ...]:
    if kind == "identifier":
        return (text,)
    if kind == "uuid":
        return (text.lower(),)
    if kind == "atlas":
        return ("AML." + text[4:].upper(),)
    return (text.upper(),)


def analyse(query: str) -> QueryAnalysis:
    """Type, full-text input (ORed words for natural-language queries) and identifier forms."""
    text = query.strip()
    kind = classify(text)
    words = [w for w in _WORD.findall(text) if w.lower() not in {"or", "and"}]
    if kind in PROSE_SHAPES:
        # websearch_to_tsquery ANDs words; long prose would then match nothing, so OR them and let
        # ts_rank_cd reward the chunks that cover most of them.
        fts_text = tsquery_text.prose_text(words)
    else:
        fts_text = tsquery_text.keyword_text(text, words)
    idents = set(identifier_variants(text))
    idents.update(w.lower() for w in words if any(ch.isdigit() for ch in w) or "." in w.strip("."))
    if kind in IDENTIFIER_TYPES:
        idents.add(text.lower())
    ident_text = tsquery_text.identifier_text(idents, 32)
    exact = _exact_forms(text, kind) if kind in IDENTIFIER_TYPES else ()
    return QueryAnalysis(query_type=kind, fts_text=fts_text, ident_text=ident_text, exact_forms=exact)


def exact_doc_ids(forms: Iterable[str], sources: Iterable[str]) -> list[str]:
    """`<source>:<form>` for every source: the primary keys an exact identifier may have."""
    return sorted({f"{s}:{form}" for s in sources for form in forms})


def child_forms(analysis: QueryAnalysis, known_techniques: Iterable[str]) -> list[str]:
    """Sub-technique ids of a parent-technique query (T1059 -> T1059.001, ...), ranked right after it."""
    if analysis.query_type != "technique":
        return []
    return [t for t in expand_techniques(analysis.exact_forms, known_techniques) if "." in t]


def expand_techniques(requested: Sequence[str], known: Iterable[str]) -> list[str]:
    """Each requested id plus every known sub-technique of it (T1003 -> T1003, T1003.001, ...)."""
    wanted = set(requested)
    parents = {t for t in requested if "." not in t}
    out = set(wanted)
    out.update(t for t in known if t.split(".", 1)[0] in parents)
    return sorted(out)


def fuzzy_score(query: str, title: str, identifiers: str) -> float:
    """Typo-tolerant similarity in [0, 1]: the query against the title or its closest identifier."""
    q = query.strip().lower()
    best = fuzz.WRatio(q, title.lower())
    for ident in identifiers.split():
        if abs(len(ident) - len(q)) <= max(3, len(q) // 2):
            best = max(best, fuzz.ratio(q, ident))
    return best / 100.0


@dataclass(frozen=True)
class Plan:
    """Leg sizes and weights for one request (see `plan_for`)."""

    fts_k: int
    vec_k: int
    fuzzy_k: int
    w_fts: float
    w_vec: float
    w_fuzzy: float
    single_leg: str  # '' for fused hybrid
    window: int
    needs_vector: bool
    w_label: float = 0.0  # the label leg's weight: set when the query names a technique (hybrid only)
    w_neighbours: float = 0.0  # the neighbours leg's weight: techniques of the nearest documents (hybrid only)
    w_procedures: float = 0.0  # the procedures leg's: techniques of the nearest procedure examples (hybrid only)
    scored: tuple[tuple[str, float], ...] = ()  # voter legs whose votes also count as scores (search.yaml `scored`)


def plan_for(
    mode: str,
    *,
    k: int,
    offset: int,
    query: str,
    fts_k: int | None,
    vec_k: int | None,
    w_fts: float,
    w_vec: float,
    w_fuzzy: float,
    rerank_k: int,
    group_by_doc: bool,
    query_type: str = "keyword",
) -> Plan:
    """How many candidates each leg fetches: enough for offset+k distinct documents.

    Hybrid search runs the fuzzy leg for short queries that are not a well-formed identifier: a
    typo'd name or tool is what it is for, and exact and full-text legs already cover `T1003` or a CVE.
    """
    need = offset + k
    per_leg = min(1000, max(60, need * (3 if group_by_doc else 1)))
    window = max(rerank_k, need)
    short = len(query.strip()) <= _FUZZY_MAX_CHARS and len(query.split()) <= _HYBRID_FUZZY_MAX_WORDS
    if mode == "fts":
        return Plan(per_leg, 0, 0, 1, 0, 0, "fts", window, False)
    if mode == "vector":
        return Plan(0, per_leg, 0, 0, 1, 0, "vec", window, True)
    if mode == "fuzzy":
        # Typo-tolerant lexical search: trigram titles and full text over the spelling-corrected query,
        # fused by reciprocal rank with hybrid's weights (no vectors).
        return Plan(per_leg, 0, max(per_leg, 100), w_fts, 0, w_fuzzy, "", max(window, 100), False)
    typo_prone = query_type not in IDENTIFIER_TYPES or query_type == "identifier"
    fuzzy_k = per_leg if short and typo_prone and w_fuzzy > 0 else 0
    return Plan(
        fts_k or per_leg, vec_k or per_leg, fuzzy_k, w_fts, w_vec, w_fuzzy if fuzzy_k else 0.0, "", window, True
    )


def rrf_max(plan: Plan, k0: int) -> float:
    """The fused score of a chunk ranked first in every weighted leg (normalises RRF to (0, 1])."""
    total = (
        (plan.w_fts if plan.fts_k else 0)
        + (plan.w_vec if plan.vec_k else 0)
        + (plan.w_fuzzy if plan.fuzzy_k else 0)
        + plan.w_label
        + plan.w_neighbours
        + plan.w_procedures
    )
    scored = sum(w for _, w in plan.scored)
    return total / (k0 + 1) + scored if total + scored > 0 else 1.0


def rescore(
    rows: Sequence[Mapping[str, Any]],
    *,
    mode: str,
    query: str,
    analysis: QueryAnalysis,
    config: SearchConfig,
    min_score: float | None,
) -> list[dict[str, Any]]:
    """Apply fuzzy re-scoring, source boosts, exact pinning and thresholds; ordered best first."""
    threshold = config.threshold(mode, analysis.query_type)
    out: list[dict[str, Any]] = []
    for row in rows:
        item = dict(row)
        if item.get("fuzzy_score") is not None:
            item["fuzzy_score"] = fuzzy_score(query, item["title"], item.get("identifiers") or "")
        score = float(item["score"]) if item["score"] is not None else 0.0
        if item["exact"] and mode in ("hybrid", "fts", "fuzzy"):
            score = max(score, 1.0)
        score *= config.boost(item["source"])
        item["score"] = score
        if not item["exact"]:
            if score < threshold or (min_score is not None and score < min_score):
                continue
        out.append(item)
    out.sort(key=result_order)
    return out


def result_order(row: Mapping[str, Any]) -> tuple[bool, int, bool, float, str]:
    """The results' order: exact identifiers first, then tier, identifier hits, score and chunk id."""
    return (not row["exact"], -int(row.get("tier") or 0), not row.get("ident_hit"), -row["score"], row["chunk_id"])
