"""What the opt-in query log keeps of an answered search or plan: one row with its attention flags."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from serving.contract.plan_models import PlanRequest, PlanResponse
from serving.contract.requests import SearchRequest
from serving.contract.responses import SearchResponse
from serving.feedback.attention import Hit, flags
from serving.feedback.querylog import QueryLog
from serving.search.catalog import Catalog
from serving.search.search_file import Attention

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestLog:
    """Writes to `query_log` (None: the log is off and every call is a no-op), judged by `attention`
    (search.yaml) against the catalog's known ATT&CK ids."""

    query_log: QueryLog | None
    catalog: Catalog
    attention: Attention

    @property
    def enabled(self) -> bool:
        return self.query_log is not None

    def flags(self, query: str, hits: Sequence[Hit], score_scale: str | None, *, attack: bool = True) -> list[str]:
        """The attention flags of an answered request (serving/feedback/attention.py): `score_scale` is the mode
        whose low_score applies (None: not judged), `attack` whether the hits carry technique labels."""
        return flags(
            query,
            hits,
            known=self.catalog.technique_lookup().keys(),
            low_score=self.attention.low_score.of(score_scale) if score_scale else None,
            weak_match=self.attention.weak_attack_match if attack else None,
        )

    def search(self, req: SearchRequest, resp: SearchResponse, endpoint: str = "search") -> None:
        # fts_then_vec scores are cosines (the vector scale); a later page has no top result to judge.
        scale = "vector" if req.mode == "hybrid" and req.strategy == "fts_then_vec" else req.mode
        self._write(
            endpoint,
            req.query,
            resp.query_type,
            [Hit(r.doc_id, r.score, r.techniques) for r in resp.results],
            resp.took_ms,
            {"mode": req.mode, "k": req.k, "strategy": req.strategy},
            score_scale=None if req.offset else scale,
        )

    def plan(self, req: PlanRequest, resp: PlanResponse, endpoint: str = "plan") -> None:
        """A plan's selected chunks carry no technique labels, so weak_attack_match is not judged."""
        hits = sorted((Hit(c.doc_id, c.score, ()) for c in resp.selected), key=lambda h: -h.score)
        details = {"plan": resp.plan_name, "candidates": resp.candidates}
        self._write(
            endpoint, req.query, resp.query_type, hits, resp.took_ms, details, score_scale="hybrid", attack=False
        )

    def _write(
        self,
        endpoint: str,
        query: str,
        query_type: str,
        hits: Sequence[Hit],
        latency_ms: float,
        details: dict[str, Any],
        *,
        score_scale: str | None,
        attack: bool = True,
    ) -> None:
        """One query-log row with its attention flags; never raises (logging must not fail a request,
        and MCP logs inside it)."""
        if self.query_log is None:
            return
        try:
            self.query_log.write(
                endpoint=endpoint,
                query_type=query_type,
                query_text=query,
                top_score=hits[0].score if hits else None,
                result_count=len(hits),
                latency_ms=latency_ms,
                details=details,
                attention=self.flags(query, hits, score_scale, attack=attack),
            )
        except Exception:  # noqa: BLE001
            log.warning("query log row not written", exc_info=True)
