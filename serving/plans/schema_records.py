"""The query-writing plan's extra candidates: for each detection it found, the telemetry-schema records
that describe the events the detection reads (serving/plans/telemetry.yaml), so the context holds both the
rule and where its fields live (Sysmon event 1, Defender's DeviceProcessEvents, ECS `process`, ...)."""

from __future__ import annotations

from collections.abc import Sequence

from serving.access.keys import Principal
from serving.contract.responses import SearchResult
from serving.plans.reads import DocumentReads
from serving.plans.selection import Candidate
from serving.plans.telemetry import TelemetryMap

MAX_SCHEMAS = 8  # schema records added per plan (the plan's quota then picks among them)


def schema_candidates(
    reads: DocumentReads,
    table: TelemetryMap,
    hits: Sequence[SearchResult],
    principal: Principal,
    taken: set[str],
    version_of: dict[str, str],
) -> list[Candidate]:
    """First chunks of the schema records mapped from the hits' Sigma logsources, each scored like the best
    detection that led to it; records already among the candidates (`taken` doc ids) are left out."""
    score_of: dict[str, float] = {}
    for hit in hits:
        logsource = (hit.metadata or {}).get("logsource")
        if not isinstance(logsource, dict):
            continue
        for doc_id in table.schemas_for(logsource):
            if doc_id not in taken and doc_id not in score_of and len(score_of) < MAX_SCHEMAS:
                score_of[doc_id] = hit.score
    if not score_of:
        return []
    chunks = reads.chunks([f"{doc_id}#0" for doc_id in score_of], principal).chunks
    urls = {d.doc_id: d.url for d in reads.documents(list(score_of), principal).documents}
    return [
        Candidate(
            chunk_id=c.chunk_id,
            doc_id=c.doc_id,
            source=c.source,
            category="schema",
            score=score_of[c.doc_id],
            title=c.title,
            text=c.text,
            url=urls.get(c.doc_id) or "",
            source_version=version_of.get(c.source, ""),
            location=c.location,
        )
        for c in chunks
    ]
