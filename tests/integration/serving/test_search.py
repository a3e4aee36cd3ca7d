"""POST /v1/search on the real corpus: identifiers, modes, score scales, filters, paging, return options."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from secrag.db import database
from serving.api.app import create_app
from serving.settings import ServingSettings

from .conftest import doc_ids, search


@pytest.mark.parametrize(
    ("query", "expected", "query_type"),
    [
        ("T1003", "mitre_attack:T1003", "technique"),
        ("T1003.001", "mitre_attack:T1003.001", "sub_technique"),
        ("t1059", "mitre_attack:T1059", "technique"),
        ("CVE-2021-44228", "cisa_kev:CVE-2021-44228", "cve"),
        ("cve-2017-0144", "cisa_kev:CVE-2017-0144", "cve"),
        ("CAPEC-66", "capec:CAPEC-66", "capec"),
        ("AML.T0051", "mitre_atlas:AML.T0051", "atlas"),
        ("D3-AL", "mitre_d3fend:D3-AL", "d3fend"),
    ],
)
@pytest.mark.parametrize("mode", ["hybrid", "fts"])
def test_exact_identifier_puts_its_document_first(
    client: TestClient, query: str, expected: str, query_type: str, mode: str
) -> None:
    payload = search(client, query, mode=mode, k=5)
    assert payload["query_type"] == query_type
    first = payload["results"][0]
    assert (first["doc_id"], first["exact"], first["score"]) == (expected, True, 1.0)
    assert expected not in doc_ids(payload)[1:]


def test_rule_uuid_finds_the_rule(client: TestClient, serving_db_url: str) -> None:
    with database.connect(serving_db_url) as conn:
        doc_id = conn.execute("SELECT doc_id FROM documents WHERE source = 'sigma' ORDER BY doc_id LIMIT 1").fetchone()[
            0
        ]
    uuid = doc_id.split(":", 1)[1]
    payload = search(client, uuid.upper(), k=3)
    assert payload["query_type"] == "uuid"
    assert payload["results"][0]["doc_id"] == doc_id


def test_parent_technique_finds_sub_technique_chunks(client: TestClient) -> None:
    payload = search(client, "T1059", k=20, mode="fts")
    ids = doc_ids(payload)
    assert ids[0] == "mitre_attack:T1059"
    assert any(i.startswith("mitre_attack:T1059.") for i in ids)
    assert any(i.startswith(("atomic:", "sigma:")) for i in ids)


def test_tool_name_finds_executable_identifiers(client: TestClient, serving_db_url: str) -> None:
    payload = search(client, "mimikatz", k=10, mode="fts", **{"return": {"text": True}})
    assert payload["results"]
    with database.connect(serving_db_url) as conn:
        with_exe = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT doc_id FROM chunks WHERE ' ' || identifiers || ' ' LIKE '% mimikatz.exe %'"
            )
        }
    assert with_exe & set(doc_ids(payload))


def test_fuzzy_mode_survives_typos(client: TestClient) -> None:
    payload = search(client, "mimikats", mode="fuzzy", k=5)
    assert payload["results"]
    top = payload["results"][0]
    assert "mimikatz" in (top["title"].lower() + " " + top["doc_id"]) or top["scores"]["fuzzy"]["score"] >= 0.8
    assert all(0.0 <= r["score"] <= 1.0 for r in payload["results"])
    assert all(r["scores"]["vector"] is None for r in payload["results"])  # lexical legs only
    assert any(r["scores"]["fuzzy"] is not None for r in payload["results"])


def test_fuzzy_mode_corrects_spelling_for_its_full_text_leg(client: TestClient) -> None:
    """Typo tolerance beyond titles: a misspelt word of a longer query is corrected for full text."""
    payload = search(client, "credentail dumping from lsass memory", mode="fuzzy", k=5)
    assert payload["corrections"] == {"credentail": "credential"}
    assert any(r["scores"]["fts"] is not None for r in payload["results"])
    assert "mitre_attack:T1003.001" in doc_ids(payload) or any(
        "lsass" in r["title"].lower() for r in payload["results"]
    )


def test_natural_language_query_ranks_the_technique(client: TestClient) -> None:
    payload = search(client, "dump credentials from lsass process memory", k=10)
    assert payload["query_type"] == "sentence"  # prose of one sentence
    assert "mitre_attack:T1003.001" in doc_ids(payload)


@pytest.mark.parametrize(
    ("mode", "low", "high"), [("fts", 0.0, 1.0), ("vector", -1.0, 1.0), ("hybrid", 0.0, 1.0), ("fuzzy", 0.0, 1.0)]
)
def test_score_scales_per_mode(client: TestClient, mode: str, low: float, high: float) -> None:
    payload = search(client, "powershell download cradle", mode=mode, k=20)
    scores = [r["score"] for r in payload["results"]]
    assert all(low <= s <= high for s in scores)
    assert scores == sorted(scores, reverse=True)
    leg = {"fts": "fts", "vector": "vector"}.get(mode)  # hybrid and fuzzy are fused
    for r in payload["results"]:
        if leg:
            assert r["scores"][leg]["score"] == pytest.approx(r["score"], abs=1e-5)
        else:
            legs = [v for v in r["scores"].values() if v]
            assert legs and all(v["rank"] >= 1 for v in legs)


def test_hybrid_fuses_legs_by_reciprocal_rank(client: TestClient) -> None:
    payload = search(client, "powershell download cradle", k=10, rrf_k0=60, w_fuzzy=0)
    for r in payload["results"]:
        # three legs at weight 1: full text, vectors and the neighbours leg (every hybrid text query)
        expected = sum(1 / (60 + v["rank"]) for k, v in r["scores"].items() if v and k != "fuzzy") / (3 / 61)
        assert r["score"] == pytest.approx(expected, rel=1e-4)


def test_fts_then_vec_strategy(client: TestClient) -> None:
    payload = search(client, "lsass memory dump", strategy="fts_then_vec", candidates_k=30, k=10)
    assert payload["results"]
    first = payload["results"][0]
    assert first["scores"]["fts"] is not None and first["scores"]["vector"] is not None


def test_enriched_query_names_mentioned_techniques(client: TestClient) -> None:
    payload = search(client, "detect T1003.001 abuse", k=3)
    assert "OS Credential Dumping: LSASS Memory" in payload["enriched_query"]


@pytest.mark.parametrize("mode", ["hybrid", "fts", "vector", "fuzzy"])
def test_source_filter(client: TestClient, mode: str) -> None:
    payload = search(client, "mimikatz credential dumping", mode=mode, k=20, filters={"sources": ["sigma", "lolbas"]})
    assert {r["source"] for r in payload["results"]} <= {"sigma", "lolbas"}


def test_technique_filter_matches_sub_techniques(client: TestClient) -> None:
    payload = search(client, "credential access", k=30, filters={"techniques": ["T1003"]}, mode="vector")
    assert payload["results"]
    for r in payload["results"]:
        assert any(t == "T1003" or t.startswith("T1003.") for t in r["techniques"])
    assert any(t.startswith("T1003.") for r in payload["results"] for t in r["techniques"])


def test_platform_tag_and_date_filters(client: TestClient) -> None:
    linux = search(client, "process execution", k=20, filters={"platforms": ["linux"]}, mode="vector")
    assert linux["results"] and all("linux" in r["platforms"] for r in linux["results"])
    none = search(client, "process execution", k=5, filters={"updated_before": "2000-01-01T00:00:00Z"})
    assert none["results"] == []
    assert search(client, "process execution", k=5, filters={"created_before": "2000-01-01T00:00:00Z"})["results"] == []
    since = search(client, "process execution", k=5, filters={"created_after": "2000-01-01T00:00:00Z"}, mode="fts")
    assert since["results"]  # every document of the test store was created after 2000
    assert search(client, "process execution", k=5, filters={"created_after": "2999-01-01T00:00:00Z"})["results"] == []
    tags = search(
        client,
        "credential",
        k=10,
        filters={"tags_all": ["attack.credential-access", "attack.t1003.001"]},
        mode="vector",
        **{"return": {"metadata": True}},
    )
    assert tags["results"] and all(r["source"] == "sigma" for r in tags["results"])


def test_doc_id_filter(client: TestClient) -> None:
    wanted = ["mitre_attack:T1003", "mitre_attack:T1059"]
    payload = search(client, "anything at all", k=10, filters={"doc_ids": wanted})
    assert sorted(doc_ids(payload)) == sorted(wanted)


@pytest.mark.parametrize("exact_max", [0, 4000], ids=["hnsw-iterative", "exact-distances"])
@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_selective_filter_still_returns_k(
    client: TestClient, serving_db_url: str, mode: str, exact_max: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter matching ~1 % of the chunks still yields every match (iterative HNSW scans or exact distances)."""
    from serving.search import leg_shapes

    monkeypatch.setattr(leg_shapes, "EXACT_VECTOR_MAX_CHUNKS", exact_max)
    with database.connect(serving_db_url) as conn:
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        docs = [
            r[0]
            for r in conn.execute(
                "SELECT doc_id FROM documents WHERE source = 'mitre_atlas' AND tenant IS NULL ORDER BY doc_id LIMIT 5"
            )
        ]
        chunks = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = ANY(%s)", [docs]).fetchone()[0]
    assert chunks / total <= 0.015
    # A query near every ATLAS text, so no chunk falls under the model's vector threshold (which would
    # drop it and count it in below_vector_threshold).
    query = "attacks on machine learning models and AI systems"
    payload = search(client, query, mode=mode, k=len(docs), filters={"doc_ids": docs})
    assert sorted(doc_ids(payload)) == sorted(docs) and payload["below_vector_threshold"] == 0
    chunk_payload = search(client, query, mode="vector", k=chunks, group_by_doc=False, filters={"doc_ids": docs})
    assert len(chunk_payload["results"]) == chunks


def test_vector_leg_uses_the_hnsw_index(serving_db_url: str) -> None:
    from pgvector.psycopg import register_vector

    with database.connect(serving_db_url) as conn:
        register_vector(conn)
        # 533 rows: the planner prefers a sort; forbid it to prove the expression matches the index.
        conn.execute("SET enable_sort = off")
        probe = conn.execute("SELECT vector FROM embeddings LIMIT 1").fetchone()[0]
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT content_hash FROM embeddings WHERE model_id = 'all-MiniLM-L6-v2' "
                "ORDER BY vector::vector(384) <=> %s::vector LIMIT 5",
                [probe],
            )
        )
    assert "embeddings_minilm_hnsw_idx" in plan
    from secrag.db.queries import Queries
    from secrag.files.package_data import sql_dir
    from serving.search.statements import compose

    statements = compose(Queries(sql_dir(), "serving"), "all-MiniLM-L6-v2", 384)
    assert "e.vector::vector(384) <=>" in statements.vec and "e.model_id = 'all-MiniLM-L6-v2'" in statements.vec
    # Within the one UNION ALL statement of a search, the vector leg still walks the index.
    params = {
        "tenant": None,
        "user": None,
        "groups": [],
        "sources": None,
        "doc_ids": None,
        "techniques": None,
        "platforms": None,
        "domains": None,
        "domain_techniques": None,
        "attack_sources": [],
        "tags_any": None,
        "tags_all": None,
        "updated_after": None,
        "updated_before": None,
        "created_after": None,
        "created_before": None,
        "fts_text": "lsass",
        "ident_text": "",
        "has_ident": False,
        "ident_tier": False,
        "qvec": probe,
        "fts_k": 5,
        "vec_k": 5,
        "pool_fts": True,
    }
    with database.connect(serving_db_url) as conn:
        register_vector(conn)
        conn.execute("SET enable_sort = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + statements.search(["vec", "fts"]), params))
    assert "embeddings_minilm_hnsw_idx" in plan and "Append" in plan


def test_group_by_doc_and_paging(client: TestClient) -> None:
    grouped = search(client, "powershell", k=20, mode="fts")
    assert len(set(doc_ids(grouped))) == len(grouped["results"])
    ungrouped = search(client, "lsass", k=50, mode="fts", group_by_doc=False)
    assert len(set(doc_ids(ungrouped))) < len(ungrouped["results"])
    page1 = search(client, "powershell", k=5, mode="fts")
    page2 = search(client, "powershell", k=5, offset=5, mode="fts")
    assert doc_ids(page1) + doc_ids(page2) == doc_ids(grouped)[:10]


def test_return_options(client: TestClient) -> None:
    payload = search(
        client,
        "lsass memory",
        k=3,
        **{"return": {"text": True, "metadata": True, "snippets": True, "max_text_chars": 40}},
    )
    for r in payload["results"]:
        assert r["text"] is not None and len(r["text"]) <= 40
        assert isinstance(r["metadata"], dict)
    assert any("<mark>" in (r["snippet"] or "") for r in payload["results"])
    bare = search(client, "lsass memory", k=3, **{"return": {"snippets": False}})
    assert all(r["snippet"] is None and r["text"] is None and r["metadata"] is None for r in bare["results"])


def test_min_score_drops_weak_results(client: TestClient) -> None:
    payload = search(client, "lsass memory", k=20, mode="vector", min_score=0.5)
    assert all(r["score"] >= 0.5 for r in payload["results"])


def test_common_words_rank_full_text_within_the_vector_pool(
    client: TestClient, serving_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyword queries estimated to match many chunks (column statistics) skip the corpus-wide full-text leg."""
    from serving.contract.requests import SearchRequest
    from serving.search import analysis as logic
    from serving.search import leg_shapes

    with database.connect(serving_db_url, autocommit=True) as conn:
        conn.execute("ANALYZE chunks")
    service = client.app.state.service  # type: ignore[attr-defined]
    service.catalog.forget_lexeme_stats()  # re-read the statistics ANALYZE just wrote
    stats = service.catalog.lexeme_stats()
    common = max(stats.shares, key=stats.shares.get)
    monkeypatch.setattr(leg_shapes, "FTS_CORPUS_MAX_MATCHES", stats.chunks * stats.shares[common] / 2)

    def pooled(query: str, **body: object) -> bool:
        req = SearchRequest(query=query, **body)
        analysis = logic.analyse(query)
        params = {"fts_text": analysis.fts_text, "ident_text": analysis.ident_text}
        with service.pool.connection() as conn:
            return service.searcher.shaper.pool_fts(conn, req, analysis, params)

    assert pooled(common)
    assert not pooled("zzyzx")
    assert not pooled(common, mode="fts")  # a full-text-only search always ranks the whole corpus
    assert pooled("how do attackers dump credentials from lsass memory")  # prose: always the pool
    payload = search(client, common, k=5)
    assert payload["results"] and any(r["scores"]["fts"] for r in payload["results"])


def test_small_filters_use_exact_distances(client: TestClient) -> None:
    from serving.contract.requests import SearchFilters

    service = client.app.state.service  # type: ignore[attr-defined]
    with service.pool.connection() as conn:
        assert service.searcher.shaper.exact_vectors(conn, SearchFilters(doc_ids=["a", "b"]))
        assert not service.searcher.shaper.exact_vectors(conn, SearchFilters())
        shaper = service.searcher.shaper
        assert not shaper.exact_vectors(conn, SearchFilters(platforms=["windows"]))  # no estimate: the index


def test_prose_in_full_text_mode_ranks_by_its_rarest_words(client: TestClient, serving_db_url: str) -> None:
    from serving.search import analysis as logic
    from serving.search import leg_shapes

    with database.connect(serving_db_url, autocommit=True) as conn:
        conn.execute("ANALYZE chunks")
    service = client.app.state.service  # type: ignore[attr-defined]
    service.catalog.forget_lexeme_stats()
    prose = "the adversary uses the process to dump the credentials from lsass memory with a tool such as mimikatz"
    analysis = logic.analyse(prose)
    with service.pool.connection() as conn:
        params = {"fts_text": analysis.fts_text, "ident_text": analysis.ident_text}
        rare = service.searcher.shaper.rare_words(conn, params, leg_shapes.PROSE_MAX_WORDS, leg_shapes.PROSE_MAX_SHARE)
    words = rare.split(" or ")
    assert 1 <= len(words) <= 8 and "mimikatz" in words
    payload = search(client, prose, mode="fts", k=5)
    assert payload["results"] and payload["query_type"] == "sentence"


def test_a_wider_hnsw_search_list_is_set_on_the_connection_only_when_needed(client: TestClient) -> None:
    """Reader sessions start at ef_search 60; a request asking for more candidates widens it (capped at 1000)."""
    from serving.access.sessions import DEFAULT_EF_SEARCH, MAX_EF_SEARCH

    service = client.app.state.service  # type: ignore[attr-defined]
    with service.pool.connection() as conn:

        def ef() -> str:
            conn.execute("SELECT '[1]'::vector")  # pgvector loaded: SHOW knows the setting
            return conn.execute("SHOW hnsw.ef_search").fetchone()[0]

        assert ef() == str(DEFAULT_EF_SEARCH)
        service.sessions.ef_search(conn, 300)
        assert ef() == "300"
        service.sessions.ef_search(conn, 50_000)
        assert ef() == str(MAX_EF_SEARCH)
        service.sessions.ef_search(conn, DEFAULT_EF_SEARCH)
        assert ef() == str(DEFAULT_EF_SEARCH)
    wide = search(client, "lsass memory", mode="vector", k=10, vec_k=300)
    assert len(wide["results"]) == 10


def test_filters_take_names_as_users_type_them(client: TestClient) -> None:
    """Platforms by any case or alias, sources case-insensitively; unknown values are a 422 naming the valid ones."""
    typed = search(client, "process execution", k=10, mode="fts", filters={"platforms": ["Linux", "UNIX"]})
    stored = search(client, "process execution", k=10, mode="fts", filters={"platforms": ["linux", "unix"]})
    assert typed["results"] and [r["chunk_id"] for r in typed["results"]] == [r["chunk_id"] for r in stored["results"]]
    mac = search(client, "launch agent", k=5, mode="fts", filters={"platforms": ["Mac OS X"]})
    assert all("macos" in r["platforms"] for r in mac["results"])
    upper = search(client, "lsass", k=5, mode="fts", filters={"sources": ["SIGMA", "Mitre_Attack"]})
    assert upper["results"] and {r["source"] for r in upper["results"]} <= {"sigma", "mitre_attack"}
    bad = client.post("/v1/search", json={"query": "x", "filters": {"platforms": ["Windoze"]}})
    assert bad.status_code == 422 and "unknown platforms: 'Windoze'" in bad.text and "windows" in bad.text
    bad = client.post("/v1/search", json={"query": "x", "filters": {"sources": ["Sigmaa"]}})
    assert bad.status_code == 422 and "valid sources:" in bad.text and "sigma" in bad.text


@pytest.mark.parametrize(
    "body",
    [
        {"query": "lsass", "k": "10"},
        {"query": "lsass", "k": True},
        {"query": "lsass", "group_by_doc": 1},
        {"query": "lsass", "w_fts": "1.5"},
        {"query": "lsass", "filters": {"updated_after": 0}},
        {"query": "lsass", "return": {"text": "yes"}},
    ],
)
def test_request_fields_take_exactly_their_json_type(client: TestClient, body: dict[str, Any]) -> None:
    assert client.post("/v1/search", json=body).status_code == 422


def test_operation_ids_are_the_route_names(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert paths["/v1/search"]["post"]["operationId"] == "search"
    assert paths["/v1/docs/{doc_id}"]["get"]["operationId"] == "get_document"
    assert client.post("/v1/search", json={"query": "lsass", "k": 10.0}).status_code == 200  # integral: an integer


def test_a_misspelt_word_is_corrected_for_full_text_and_reported(client: TestClient) -> None:
    payload = search(client, "credental dumping from lsass", mode="fts", k=5)
    assert payload["corrections"] == {"credental": "credential"}
    assert payload["results"]  # the corrected word matches; as written it matched nothing
    assert search(client, "credential dumping from lsass", k=5)["corrections"] == {}


def test_the_vocabulary_holds_public_titles_only(client: TestClient) -> None:
    service = client.app.state.service  # type: ignore[attr-defined]
    words = service.catalog.vocabulary().documents  # read at start-up
    assert "mimikatz" in words and "credential" in words
    assert "acme" not in words and "globex" not in words  # private folder titles never become corrections


def test_a_technique_named_in_full_ranks_its_labelled_documents(client: TestClient) -> None:
    payload = search(client, "OS Credential Dumping: LSASS Memory", k=5, filters={"sources": ["sigma"]})
    top = payload["results"]
    assert top and all("T1003.001" in r["techniques"] for r in top)
    assert all(r["scores"]["label"] is not None for r in top)  # the label leg found each of them
    unlabelled = search(client, "OS Credential Dumping: LSASS Memory", mode="fts", k=5)
    assert all(r["scores"]["label"] is None for r in unlabelled["results"])  # hybrid only
    assert all(r["scores"]["label"] is None for r in search(client, "lsass memory dump", k=5)["results"])


def test_a_source_name_fragment_filters_by_substring(client: TestClient) -> None:
    mitre = search(client, "credential dumping", k=20, filters={"source_contains": "MITRE"})
    assert mitre["results"] and all(r["source"].startswith("mitre_") for r in mitre["results"])
    assert len({r["source"] for r in mitre["results"]}) > 1  # mitre_attack and others
    both = search(client, "credential dumping", k=5, filters={"source_contains": "mitre", "sources": ["sigma"]})
    assert both["results"] == []  # ANDed with the exact list
    assert search(client, "mimikatz", k=5, filters={"source_contains": "acme"})["results"] == []  # private
    alice = search(client, "mimikatz", "alice-key", k=5, filters={"source_contains": "acme"})
    assert alice["results"] and all(r["source"].startswith("acme") for r in alice["results"])
    blank = client.post("/v1/search", json={"query": "x", "filters": {"source_contains": " "}})
    assert blank.status_code == 422


def test_the_labels_of_near_documents_bring_their_techniques(client: TestClient) -> None:
    """kNN label transfer: an Atomic test's own words, asked of ATT&CK, find the technique it is
    labelled with through the neighbours leg (the test itself and the rules near it vote)."""
    body = {"filters": {"sources": ["atomic"], "techniques": ["T1218.011"]}, "return": {"text": True}}
    [atomic] = search(client, "rundll32", k=1, **body)["results"]
    question = f"{atomic['title']}. {atomic['text']}"[:900]
    payload = search(client, question, k=5, filters={"sources": ["mitre_attack"]})
    top = {r["doc_id"]: r for r in payload["results"]}
    assert "mitre_attack:T1218.011" in list(top)[:3]
    assert top["mitre_attack:T1218.011"]["scores"]["neighbours"] is not None
    assert top["mitre_attack:T1218.011"]["scores"]["neighbours"]["rank"] <= 2  # among the most voted
    for mode in ("fts", "vector"):  # hybrid only
        single = search(client, question, mode=mode, k=5, filters={"sources": ["mitre_attack"]})
        assert all(r["scores"]["neighbours"] is None for r in single["results"])
    assert all(r["scores"]["neighbours"] is None for r in search(client, "T1218.011", k=3)["results"])


def test_weight_zero_turns_the_neighbours_leg_off(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], tmp_path: Path
) -> None:
    config = tmp_path / "search.yaml"
    # the leg's weight, and the weight of the query's shape (laid over the shipped class weights)
    config.write_text("neighbours: {weight: 0}\nclass_weights: {sentence: {neighbours: 0}}\n")
    with TestClient(create_app(settings_for(serving_db_url, search_config=config, mcp_enabled=False))) as api:
        payload = search(api, "rundll32 executing a dll export", k=5, filters={"sources": ["mitre_attack"]})
    assert payload["results"] and all(r["scores"]["neighbours"] is None for r in payload["results"])


def test_vector_candidates_under_the_models_threshold_are_dropped_and_counted(
    client: TestClient, serving_db_url: str, settings_for: Callable[..., ServingSettings], tmp_path: Path
) -> None:
    prose = "a scheduled job quietly copies files to a remote share every night"
    shipped = search(client, prose, mode="vector", k=50)
    assert shipped["vector_threshold"] == 0.07 and shipped["below_vector_threshold"] == 0  # int8, sentence
    config = tmp_path / "search.yaml"
    config.write_text(f"vector_thresholds: {{{shipped['model']}: {{keyword: -1, sentence: 0.3}}}}\n")
    with TestClient(create_app(settings_for(serving_db_url, search_config=config, mcp_enabled=False))) as api:
        vector = search(api, prose, mode="vector", k=50)
        assert vector["vector_threshold"] == 0.3 and vector["below_vector_threshold"] > 0
        assert vector["results"] and all(r["score"] >= 0.3 for r in vector["results"])
        # the same ranking, cut at the threshold (the count is of the leg's candidates, beyond k too)
        assert [r["chunk_id"] for r in vector["results"]] == [
            r["chunk_id"] for r in shipped["results"] if r["score"] >= 0.3
        ]
        hybrid = search(api, prose, k=50)
        assert hybrid["below_vector_threshold"] > 0
        assert all(r["scores"]["vector"] is None or r["scores"]["vector"]["score"] >= 0.3 for r in hybrid["results"])
        keyword = search(api, "mimikatz lsass", mode="vector", k=5)  # the shape's default
        assert keyword["vector_threshold"] == -1 and keyword["below_vector_threshold"] == 0  # its shape's


def test_class_weights_apply_to_their_query_shape_unless_the_request_sets_them(
    serving_db_url: str, settings_for: Callable[..., ServingSettings], tmp_path: Path
) -> None:
    config = tmp_path / "search.yaml"
    config.write_text("class_weights: {sentence: {neighbours: 0, procedures: 0, fts: 0}, keyword: {vec: 0}}\n")
    prose = "a scheduled job quietly copies files to a remote share every night"  # names no technique
    with TestClient(create_app(settings_for(serving_db_url, search_config=config, mcp_enabled=False))) as api:
        natural = search(api, prose, k=5, rrf_k0=60)
        assert natural["query_type"] == "sentence" and natural["results"]
        assert all(r["scores"]["neighbours"] is None for r in natural["results"])  # weight 0: not run
        for r in natural["results"]:  # full text weighs 0: the fused score is the vector leg's alone
            vector_only = 1 / (60 + r["scores"]["vector"]["rank"]) / (1 / 61) if r["scores"]["vector"] else 0.0
            assert r["score"] == pytest.approx(vector_only, rel=1e-4)
        keyword = search(api, "mimikatz lsass", k=5)
        assert keyword["query_type"] == "keyword"
        assert any(r["scores"]["neighbours"] is not None for r in keyword["results"])
        # the keyword shape weighs vectors 0 unless the request sets w_vec
        unweighted = [r for r in keyword["results"] if r["scores"]["vector"] and not r["scores"]["fts"]]
        assert all(r["score"] < 0.5 for r in unweighted)
        own = search(api, "mimikatz lsass", k=5, w_vec=1.0)
        assert own["results"]


def test_a_caller_supplied_query_embedding(client: TestClient) -> None:
    encoder = client.app.state.service.searcher.encoder  # type: ignore[attr-defined]
    query = "dump lsass process memory"
    plain = search(client, query, mode="vector", k=5)
    values = [float(x) * 3.0 for x in encoder.encode(plain["enriched_query"])]  # any length: normalised
    given = {"model": encoder.model_id, "values": values}
    assert doc_ids(search(client, query, mode="vector", k=5, query_embedding=given)) == doc_ids(plain)
    elsewhere = search(client, "unrelated words", mode="vector", k=5, query_embedding=given)
    assert doc_ids(elsewhere) == doc_ids(plain)  # the vector leg searched the given vector
    assert search(client, query, mode="fts", k=5, query_embedding=given)["results"]  # checked, not needed
    for embedding, loc in (
        ({"model": "all-MiniLM-L6-v2-other", "values": values}, ["query_embedding", "model"]),
        ({"model": encoder.model_id, "values": values[:100]}, ["query_embedding", "values"]),
        ({"model": encoder.model_id, "values": [0.0] * len(values)}, ["query_embedding", "values"]),
        ({"model": encoder.model_id, "values": [1e-7] * len(values)}, ["query_embedding", "values"]),
        ({"values": values}, ["query_embedding", "model"]),
    ):
        response = client.post("/v1/search", json={"query": query, "query_embedding": embedding})
        assert response.status_code == 422, embedding
        assert response.json()["detail"][0]["loc"][1:3] == loc, response.json()
