"""A layer comparison's answer size, bounded before the layer is built: at most an entry per technique and tactic
its layers have entries for (so at most both layers' entries, each under one of its domain's tactics), each with
its technique's one comment of at most COMMENT_CAP characters. SECRAG_MAX_ANSWER_BYTES is checked against this
estimate, an upper bound of the JSON the answer serialises to."""

from __future__ import annotations

import json
from collections.abc import Sequence

from serving.contract.layer_models import LayerReport
from serving.layers.algebra import Combined
from serving.layers.comments import COMMENT_CAP

# An entry's JSON but its id, tactic and comment: {"techniqueID":"","tactic":"","score":-123456789.12345679,
# "comment":"","enabled":true,"showSubtechniques":false,"metadata":[]}, and a comma.
ENTRY_BYTES = 160
ENVELOPE_BYTES = 4096  # the layer's versions, layout, gradient, metadata, took_ms and the answer's keys
NARROW = (
    "send layers of fewer entries, or with shorter comments and names (the result has an entry per technique and "
    f"tactic, each carrying its technique's comment of up to {COMMENT_CAP:,} characters)"
)


def json_bytes(text: str) -> int:
    """The string's bytes as UTF-8 JSON, as the API writes it (controls escaped, the rest as is)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def estimated_bytes(combined: Sequence[Combined], left: LayerReport, right: LayerReport, names: Sequence[str]) -> int:
    """An upper bound of the answer's JSON bytes; `names` are the layer names the layer's own name and description
    repeat (each counted three times)."""
    entries = 0
    for c in combined:
        per_entry = ENTRY_BYTES + len(c.technique) + json_bytes(c.comment)
        entries += sum(per_entry + json_bytes(t) for t in c.tactics) if c.tactics else per_entry
    listed = sum(json_bytes(c.technique) + 1 for c in combined)
    reports = len(left.model_dump_json()) + len(right.model_dump_json())
    return ENVELOPE_BYTES + entries + listed + reports + 3 * sum(json_bytes(n) for n in names)
