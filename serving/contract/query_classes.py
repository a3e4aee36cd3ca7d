"""The query classes, stated once: every config, classifier and log names its classes from here.

A query has two classes on two axes:
- its *type* (`QueryType`): what the person wants (detections, forensics, a technique, ...), from the
  rules of serving/plans/classify.py; it names the retrieval plans (plans.yaml), their tuned score thresholds
  (`secrag tune`) and POST /v1/plan's `plan`.
- its *shape* (`QueryShape`): what the text looks like (one ATT&CK id, one CVE, a hash, a few words,
  prose), from serving/search/analysis.py's analysis; it keys the search thresholds (search.yaml), is answered as
  /v1/search's `query_type` and is what the query log records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Literal, get_args

from secrag.files.config_files import FieldError

QueryType = Literal["default", "mitre_id", "vulnerability", "detection", "forensic", "lolbin", "test", "schema"]
QUERY_TYPES: tuple[QueryType, ...] = get_args(QueryType)
DEFAULT_TYPE: QueryType = "default"

# The identifier kinds of secrag.identifiers.KINDS, any other identifier-like token, then words: a few
# (keyword), one sentence of prose (sentence: a line of a threat report, a ticket's summary) or pasted content
# (natural: several sentences, or one in a detection rule's register; a pasted rule, test or pattern).
QueryShape = Literal[
    "sub_technique",
    "technique",
    "cve",
    "capec",
    "atlas",
    "d3fend",
    "uuid",
    "identifier",
    "keyword",
    "sentence",
    "natural",
]
QUERY_SHAPES: tuple[QueryShape, ...] = get_args(QueryShape)
DEFAULT_SHAPE = "default"  # in search.yaml: the threshold of every shape not listed
PROSE_SHAPES: frozenset[QueryShape] = frozenset({"sentence", "natural"})

# The type a shape decides on its own: a whole-query technique id or CVE matches the classifier's id rules.
SHAPE_TYPES: Mapping[QueryShape, QueryType] = MappingProxyType(
    {"sub_technique": "mitre_id", "technique": "mitre_id", "cve": "vulnerability"}
)


def check_names(names: Iterable[str], known: Iterable[str], what: str) -> None:
    """FieldError at the first name not in `known` (for validators of mappings keyed by class)."""
    allowed = tuple(known)
    for name in names:
        if name not in allowed:
            raise FieldError((name,), f"unknown {what} {name!r}; known: {', '.join(allowed)}")


def type_of_logged(logged: str | None) -> QueryType | None:
    """The query type of a query-log row: a type as is, a shape when it decides the type, else None."""
    for query_type in QUERY_TYPES:
        if logged == query_type:
            return query_type
    for shape, query_type in SHAPE_TYPES.items():
        if logged == shape:
            return query_type
    return None


def is_logged_class(value: str) -> bool:
    """Whether the query log may record `value` (a shape from /v1/search, or a type)."""
    return value in QUERY_SHAPES or value in QUERY_TYPES
