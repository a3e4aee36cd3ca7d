"""What each MCP tool gives up first under a response budget (serving/mcp/budget.py), as data.

Ids, titles, scores, sources and urls are never named here, so they stay while anything else can go:
first the bulky extras an agent can ask for again (leg scores, locations, metadata, Navigator
layers, text repeated elsewhere in the answer), then long texts are shortened, then lists are
trimmed from the end (the least relevant items). A tool not listed keeps only the generic fallback.
"""

from __future__ import annotations

from serving.mcp.budget import Priority, Resume, omit, shorten, trim

SEARCH = Priority(
    (
        omit("results[].scores"),
        omit("results[].location"),
        omit("results[].metadata"),
        omit("enriched_query"),
        omit("corrections"),
        omit("results[].platforms"),
        shorten("results[].text"),
        shorten("results[].snippet"),
        trim("results"),
        trim("results[].techniques"),
    )
)

PLAN = Priority(
    (
        omit("prompt"),  # the system prompts and the context again, joined
        omit("selected[].text"),  # the context holds the same passages, cited
        omit("plan"),
        omit("selected[].location"),
        omit("citations[].passages"),
        omit("quotas"),
        shorten("context"),
        shorten("system_prompts[]"),
        trim("selected"),
        trim("citations"),
    )
)

EXPLAIN = Priority(
    (omit("corrections"), omit("quotas"), shorten("decisions[].reason"), trim("decisions")),
)

MAP = Priority(
    (
        omit("layer"),
        omit("techniques[].citations[].passages"),
        omit("techniques[].citations"),
        shorten("techniques[].sentences[].text"),
        trim("techniques[].sentences"),
        trim("techniques[].tactics"),
        trim("techniques"),
    )
)

COVERAGE = Priority(
    (
        omit("layer"),
        omit("techniques[].telemetry"),
        omit("log_sources"),
        omit("techniques[].analytics"),
        trim("techniques[].*.top"),
        trim("techniques[].*.by_source"),
        trim("techniques"),
        trim("gaps.*"),
    ),
    resume=Resume("techniques", "technique_id", "next_cursor", "truncated"),  # the techniques trimmed come next
)

DOCUMENT = (omit("metadata"), omit("chunk_ids"), omit("tags"), shorten("body"))
DOCUMENTS = Priority(
    (
        omit("documents[].metadata"),
        omit("documents[].chunk_ids"),
        omit("documents[].tags"),
        shorten("documents[].body"),
        trim("documents"),
        trim("missing"),
    )
)

CHUNK = (omit("enriched_text"), omit("location"), omit("identifiers"), shorten("text"))
CHUNKS = Priority(
    (
        omit("chunks[].enriched_text"),
        omit("chunks[].location"),
        omit("chunks[].identifiers"),
        shorten("chunks[].text"),
        trim("chunks"),
        trim("missing"),
    )
)

UPSTREAM = (shorten("content"), omit("record"))
UPSTREAMS = Priority(
    (shorten("records[].content"), omit("records[].record"), trim("records"), trim("errors"), trim("missing"))
)

SOURCES = Priority(
    (
        omit("sources[].last_attempt"),
        omit("sources[].description"),
        omit("sources[].upstream"),
        omit("sources[].branch"),
        omit("sources[].tracking"),
        shorten("sources[].last_error"),
        trim("sources"),
    )
)

STATS = Priority(
    (
        omit("requests"),
        omit("sources.*.embeddings"),
        omit("sources.*.versions"),
        trim("sources"),
    )
)

PLANS = Priority(
    (omit("plans.*.source_boosts"), omit("plans.*.category_boosts"), omit("plans.*.min_per_category"), trim("plans"))
)

CHANGES = Priority((shorten("changes[].title"), trim("changes")))

LAYERS = Priority(
    (
        omit("layer.description"),
        shorten("layer.techniques[].comment"),
        trim("layer.techniques"),
        trim("left.unknown"),
        trim("right.unknown"),
        trim("techniques"),
    )
)

LOOKUP = Priority(
    (
        shorten("results[].records[].matches[].field"),
        trim("results[].records[].matches"),
        trim("results[].records"),
        trim("results"),
    )
)

PRIORITIES: dict[str, Priority] = {
    "search": SEARCH,
    "fts": SEARCH,
    "vector": SEARCH,
    "hybrid": SEARCH,
    "fuzzy": SEARCH,
    "plan": PLAN,
    "explain": EXPLAIN,
    "map": MAP,
    "coverage": COVERAGE,
    "compare_layers": LAYERS,
    "lookup": LOOKUP,
    "list_plans": PLANS,
    "get_documents": DOCUMENTS,
    "get_document": Priority(DOCUMENT),
    "get_chunks": CHUNKS,
    "get_chunk": Priority(CHUNK),
    "get_upstream": Priority(UPSTREAM),
    "get_upstreams": UPSTREAMS,
    "changes": CHANGES,
    "list_sources": SOURCES,
    "stats": STATS,
}


def priority(tool: str) -> Priority:
    return PRIORITIES.get(tool, Priority())
