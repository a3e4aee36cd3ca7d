"""Asset keys and check names of the graph, in one place so sensors, checks and tests agree."""

from __future__ import annotations

import dagster as dg

from secrag.attack_domains import TECHNIQUE_SOURCES

LOOKUP_KEY = dg.AssetKey(["lookups", "mitre_techniques"])
ATTACK_SOURCE = "mitre_attack"
# The sources the lookup is read from (each domain's technique documents): they enrich from their own bundle,
# so they do not depend on the lookup.
LOOKUP_SOURCES = tuple(TECHNIQUE_SOURCES.values())

# Blocking checks reported by the publishing asset itself (a refused version fails the run).
NON_EMPTY = "non_empty"
NO_SHRINK = "no_suspicious_shrink"
# Checks evaluated after publishing / embedding.
TECHNIQUES_RESOLVE = "techniques_resolve"
FRESHNESS = "fresh_within_poll_interval"
REFRESH_OK = "last_refresh_ok"
OWNERS = ["team:secrag"]  # who the UI names as owner of every asset
COVERAGE = "embedding_coverage"
DIMENSIONS = "vector_dimensions"


def upstream_key(source: str) -> dg.AssetKey:
    return dg.AssetKey(["upstream", source])


def source_key(source: str) -> dg.AssetKey:
    return dg.AssetKey(["sources", source])


def folder_key(folder: str) -> dg.AssetKey:
    return dg.AssetKey(["folders", folder])


def embeddings_key(source: str) -> dg.AssetKey:
    return dg.AssetKey(["embeddings", source])


# The sentence model (pipeline/assets/sentence_model.py) and its quality gate.
SENTENCE_MODEL_KEY = dg.AssetKey(["models", "sentence_model"])
SENTENCE_QUALITY = "beats_served_model"
# The map's verifier trained beside the promoted sentence model (pipeline/assets/map_verifier.py) and its gate.
MAP_VERIFIER_KEY = dg.AssetKey(["models", "map_verifier"])
VERIFIER_QUALITY = "beats_the_vote"
