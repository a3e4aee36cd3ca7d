"""Search config, API keys, response cap and latency percentiles (no database)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pytest
from pydantic import BaseModel

from secrag.errors import ConfigError
from secrag.files.config_files import read_mapping
from secrag.files.package_data import package_path
from serving.access.keys import ANONYMOUS, Principal, load_api_keys
from serving.contract.errors import UnknownApiKey
from serving.contract.limits import cap
from serving.observability.prometheus import Exposition, quantile
from serving.search.search_file import (
    MAP_FEATURES,
    SearchConfigFile,
    load_search_config,
    merged,
    shipped_search_config,
)


def test_shipped_search_config_loads() -> None:
    config = load_search_config(package_path("serving.search", "search.yaml"))
    assert config.boost("mitre_attack") == 1.0 and config.boost("unknown") == 1.0
    assert config.threshold("fuzzy", "keyword") == 0.0
    assert config.threshold("vector", "natural") == -1.0
    assert (config.neighbours.weight, config.neighbours.documents, config.neighbours.chunks) == (1.0, 5, 40)


def test_the_neighbours_leg_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / "search.yaml"
    path.write_text("neighbours: {weight: 0, documents: 3}")
    config = load_search_config(path)
    assert (config.neighbours.weight, config.neighbours.documents, config.neighbours.chunks) == (0, 3, 40)
    assert load_search_config(tmp_path / "absent.yaml") == load_search_config()  # the shipped values


def test_an_operator_file_states_only_what_it_changes(tmp_path: Path) -> None:
    """Laid over the shipped search.yaml: mappings merged key by key, other values replaced."""
    shipped = load_search_config()
    path = tmp_path / "search.yaml"
    path.write_text("class_weights: {natural: {fts: 0.5}}\nprocedures: {sources: [sigma]}\nsource_boosts: {}\n")
    config = load_search_config(path)
    assert config.weights("natural").fts == 0.5
    assert config.weights("natural").neighbours == shipped.weights("natural").neighbours  # kept
    assert config.procedures.sources == ["sigma"] and config.procedures.documents == shipped.procedures.documents
    assert config.source_boosts == shipped.source_boosts  # an empty mapping merges nothing away
    assert config.vector_thresholds == shipped.vector_thresholds
    assert merged({"a": {"b": 1, "c": [1]}}, {"a": {"c": [2]}, "d": 3}) == {"a": {"b": 1, "c": [2]}, "d": 3}


def test_ef_search_grows_with_the_store(tmp_path: Path) -> None:
    """hnsw.ef_search by the store's size: the last step reached; steps start at 0 and grow."""
    config = load_search_config()
    assert config.ef_search_for(0) == config.ef_search_for(65_000) == 60
    assert config.ef_search_for(200_000) == 200 and config.ef_search_for(1_000_000) == 400
    assert config.label_candidates == 100
    path = tmp_path / "search.yaml"
    for steps in ("[{chunks: 10, ef: 60}]", "[{chunks: 0, ef: 60}, {chunks: 0, ef: 100}]", "[]"):
        path.write_text(f"ef_search: {steps}\n")
        with pytest.raises(ConfigError, match="ef_search"):
            load_search_config(path)
    path.write_text("label_candidates: 5\n")
    with pytest.raises(ConfigError, match="label_candidates"):
        load_search_config(path)


def test_the_shipped_file_states_every_field() -> None:
    """No default in code: the shipped search.yaml is the one place of every value."""
    data, _ = read_mapping(shipped_search_config())
    assert set(data) == set(SearchConfigFile.model_fields)
    for voters in ("neighbours", "procedures"):
        assert {"weight", "documents", "chunks"} <= set(data[voters])


def test_class_weights_per_query_shape(tmp_path: Path) -> None:
    shipped = load_search_config(package_path("serving.search", "search.yaml"))
    assert shipped.weights("natural").neighbours == 2.0
    assert shipped.weights("keyword").neighbours is None  # the defaults
    path = tmp_path / "search.yaml"
    path.write_text("class_weights: {keyword: {fts: 2, label: 0.5}}")
    weights = load_search_config(path).weights("keyword")
    assert (weights.fts, weights.vec, weights.label) == (2, None, 0.5)
    path.write_text("class_weights: {prose: {fts: 2}}")
    with pytest.raises(ConfigError, match="unknown query shape 'prose'"):
        load_search_config(path)


def test_vector_thresholds_per_model_and_query_shape(tmp_path: Path) -> None:
    shipped = load_search_config(package_path("serving.search", "search.yaml"))
    assert shipped.vector_threshold("all-MiniLM-L6-v2-int8", "natural") == 0.07
    assert shipped.vector_threshold("all-MiniLM-L6-v2-int8", "uuid") == 0.02  # the model's default
    assert shipped.vector_threshold("all-MiniLM-L6-v2", "cve") == 0.15
    path = tmp_path / "search.yaml"
    path.write_text("vector_thresholds: {all-MiniLM-L6-v2: {natural: 0.5}}")
    config = load_search_config(path)
    assert config.vector_threshold("all-MiniLM-L6-v2", "natural") == 0.5
    assert config.vector_threshold("all-MiniLM-L6-v2", "keyword") == -0.01  # the shipped value, kept
    assert config.vector_threshold("all-MiniLM-L6-v2-int8", "natural") == 0.07  # the other model's, kept
    assert config.vector_threshold("bge-base-en-v1.5", "natural") is None  # a model not listed: none


def test_the_map_tuning(tmp_path: Path) -> None:
    shipped = load_search_config(package_path("serving.search", "search.yaml")).map
    assert (shipped.min_score, shipped.rank_precision, shipped.candidates) == (0.3, [0.35, 0.13, 0.10], 10)
    path = tmp_path / "search.yaml"
    path.write_text("map: {rank_precision: [0.5, 0.2, 0.1, 0.05, 0.02]}")
    config = load_search_config(path).map
    assert (config.min_score, len(config.rank_precision), config.candidates) == (0.3, 5, 10)


SELECTOR = "map:\n  selector:\n    voters: 20\n    top: 5\n    intercept: -3.5\n    weights:\n"


def test_the_map_selector(tmp_path: Path) -> None:
    """map.selector turns the map's held path on; the shipped one weighs only known features, and an operator's
    file changes what it names (its weights merged key by key into the shipped ones)."""
    shipped = load_search_config().map.selector
    assert shipped is not None and set(shipped.weights) <= set(MAP_FEATURES) and shipped.intercept < 0
    path = tmp_path / "search.yaml"
    path.write_text(SELECTOR + "      share: 4.0\n      doc_top: 1.5\n      named: 2\n")
    map_tuning = load_search_config(path).map
    selector = map_tuning.selector
    assert selector is not None
    assert (selector.voters, selector.top, selector.intercept, selector.floor) == (20, 5, -3.5, shipped.floor)
    assert {k: selector.weights[k] for k in ("share", "doc_top", "named")} == {
        "share": 4.0,
        "doc_top": 1.5,
        "named": 2.0,
    }
    assert selector.weights["near_sim"] == shipped.weights["near_sim"]  # the shipped weights it does not name
    assert map_tuning.rank_precision == [0.35, 0.13, 0.10]  # the rest of map kept (the search path's votes)
    path.write_text("map: {selector: null}\n")
    assert load_search_config(path).map.selector is None  # off: every sentence is searched


def test_an_unknown_selector_feature_is_named_with_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "search.yaml"
    path.write_text(SELECTOR + "      share: 4.0\n      shares: 1.0\n")
    with pytest.raises(ConfigError) as caught:
        load_search_config(path)
    message = str(caught.value)
    # the line of `weights:`, the field at fault
    assert message.startswith(f"{path}:6: map.selector.weights: unknown features ['shares']; known: share, "), message
    assert message.rstrip().endswith(", ".join(MAP_FEATURES)), message


def test_scored_voter_legs_per_query_shape(tmp_path: Path) -> None:
    shipped = load_search_config()
    assert shipped.weights("sentence").scored == {"procedures": 1.0} and shipped.weights("keyword").scored == {}
    path = tmp_path / "search.yaml"
    path.write_text("class_weights: {sentence: {scored: {procedures: 1.5, neighbours: 0}}}\n")
    weights = load_search_config(path).weights("sentence")
    assert weights.scored == {"procedures": 1.5, "neighbours": 0.0}
    assert (weights.neighbours, weights.procedures) == (2.0, 8.0)  # the shipped weights, kept


@pytest.mark.parametrize(
    "text",
    [
        "map: {min_score: 1.5}",
        "map: {rank_precision: []}",
        "map: {rank_precision: [1.2]}",
        "map: {candidates: 0}",
        "map: {per_sentence: 3}",
        "vector_thresholds: {bge-tiny: {default: 0.1}}",
        "vector_thresholds: {all-MiniLM-L6-v2: {prose: 0.1}}",
        "vector_thresholds: {all-MiniLM-L6-v2: {default: 1.5}}",
        "thresholds: {magic: {default: 1}}",
        "surprise: 1",
        "source_boosts: {sigma: lots}",
        "neighbours: {documents: 0}",
        "neighbours: {weight: -1}",
        "neighbours: {votes: 3}",
        "class_weights: {natural: {vectors: 2}}",
        "class_weights: {natural: {fts: -1}}",
        "document_score: mean",
        "class_weights: {sentence: {scored: {fts: 1}}}",
        "class_weights: {sentence: {scored: {procedures: -1}}}",
        "class_weights: {sentence: {scored: {procedures: 11}}}",
        "map: {selector: {voters: 0}}",
        "map: {selector: {voters: 0, top: 5, intercept: 0, weights: {}}}",
        "map: {selector: {voters: 20, top: 51, intercept: 0, weights: {}}}",
        "map: {selector: {voters: 20, top: 5, intercept: 0, weights: {}, floor: 1.5}}",
        "map: {selector: {voters: 20, top: 5, intercept: 0, weights: {share: high}}}",
    ],
)
def test_bad_search_config_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "search.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError):
        load_search_config(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "thresholds:\n  hybrid: {default: 0.0}\n  vector:\n    natural: 0.2\n    prose: 0.3\n",
            ":5: thresholds.vector.prose: unknown query shape 'prose'; known: default, sub_technique,",
        ),
        ("source_boosts:\n  sigma: 1.0\n  atomic: 0\n", ":3: source_boosts.atomic: a boost must be in (0, 10], not 0"),
        ("thresholds:\n  semantic: {default: 0.1}\n", ":2: thresholds.semantic: Input should be 'hybrid', 'fts',"),
        ("source_boosts:\n  sigma: '1.2'\n", ":2: source_boosts.sigma: Input should be a valid number"),
    ],
)
def test_a_bad_search_config_names_file_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "search.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_search_config(path)
    assert str(caught.value).startswith(f"{path}{expected}")


PLAIN = "7c1e9a4f2b8d6e0a3c5f9b1d7e2a4c6f"  # a key as `openssl rand -hex 16` makes one (strong enough)


def test_api_keys(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"s3cret").hexdigest()
    path = tmp_path / "keys.yaml"
    path.write_text(
        f"keys:\n  - {{key: {PLAIN}, tenant: acme, user: al, groups: [red]}}\n"
        f"  - {{key_sha256: {digest}, tenant: globex}}\n"
    )
    keys = load_api_keys(path)
    assert keys.resolve(PLAIN) == Principal("acme", "al", ("red",))
    assert keys.resolve("s3cret") == Principal("globex", None, ())
    assert keys.resolve(None) is ANONYMOUS
    with pytest.raises(UnknownApiKey):
        keys.resolve("nope")
    path.write_text(f"keys:\n  - {{key: {PLAIN}}}\n")
    with pytest.raises(ConfigError, match="tenant"):
        load_api_keys(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"keys:\n  - {{key: {PLAIN}}}\n", ":2: keys[0].tenant: Field required"),
        (
            f"keys:\n  - {{key: {PLAIN}, tenant: t}}\n  - {{key_sha256: 12ab, tenant: t}}\n",
            ":3: keys[1].key_sha256: String",
        ),
        ("keys:\n  - {tenant: t}\n", ":2: keys[0]: needs exactly one of `key` or `key_sha256`"),
        (f"keys:\n  - {{key: {PLAIN}, tenant: t, group: [x]}}\n", ":2: keys[0].group: Extra inputs"),
        ("keys:\n  - {key: short, tenant: t}\n", ":2: keys[0].key: too short"),
        ("keys: {}\n", ":1: keys: Input should be a valid list"),
    ],
)
def test_a_bad_api_keys_file_names_file_line_and_field(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "keys.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_api_keys(path)
    assert str(caught.value).startswith(f"{path}{expected}")


class Item(BaseModel):
    text: str


def test_cap_keeps_a_prefix_under_the_budget() -> None:
    items = [Item(text="x" * 1000) for _ in range(10)]
    kept, truncated = cap(items, 2048 + 3500)
    assert (len(kept), truncated) == (3, True)
    assert cap(items[:2], 10_000) == (items[:2], False)


def test_percentiles() -> None:
    """Estimated from the latency histogram's buckets, as Prometheus' histogram_quantile does."""
    buckets = [(0.01, 50.0), (0.1, 100.0), (math.inf, 100.0)]
    assert (quantile(0.5, buckets), quantile(0.95, buckets)) == (0.01, pytest.approx(0.091))
    assert quantile(0.99, [(0.01, 0.0), (math.inf, 4.0)]) == 0.01  # beyond the last bound: that bound
    assert quantile(0.5, [(math.inf, 0.0)]) is None
    metrics = Exposition()
    for ms in (1.0, 2.0, 3.0):
        metrics.record("/v1/search", 200, ms)
    metrics.record("/v1/search", 503, 9.0)
    summary = metrics.summary()
    assert summary["by_status"] == {"2xx": 3, "5xx": 1}
    assert summary["by_route"]["/v1/search"]["count"] == 4  # type: ignore[index]
    assert summary["by_route"]["/v1/search"]["p50_ms"] == pytest.approx(5 * 2 / 3)  # type: ignore[index]  # 2 of 3 under 5 ms
