"""POST /v1/layers/compare's implementation: both layers read against the store, combined, its answer's size
checked against SECRAG_MAX_ANSWER_BYTES, laid out."""

from __future__ import annotations

import time

from serving.contract.layer_models import CompareRequest, CompareResponse
from serving.layers.algebra import compare
from serving.layers.answer_size import NARROW, estimated_bytes
from serving.layers.result_layer import result_layer
from serving.layers.screen import LayerReads


def compare_layers(reads: LayerReads, req: CompareRequest) -> CompareResponse:
    """`left <operation> right` as a layer in the left's domain (technique ids are unique across domains, so
    layers of two domains compare too: each report says its layer's)."""
    started = time.perf_counter()
    left = reads.technique_set(req.left, "left", req.left_min_score)
    right = reads.technique_set(req.right, "right", req.right_min_score)
    combined = compare(left.techniques, right.techniques, req.operation, req.scores)
    names = [req.left.name, req.right.name, req.name or ""]
    reads.limits.check_answer(estimated_bytes(combined, left.report, right.report, names), NARROW)
    layer = result_layer(
        combined,
        left=req.left.name,
        right=req.right.name,
        domain=req.left.domain,
        operation=req.operation,
        scores=req.scores,
        name=req.name,
    )
    return CompareResponse(
        layer=layer,
        techniques=[c.technique for c in combined],
        left=left.report,
        right=right.report,
        took_ms=round((time.perf_counter() - started) * 1000, 2),
    )
