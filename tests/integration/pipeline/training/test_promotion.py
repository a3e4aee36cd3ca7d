"""Trained models in a real store: recording them, promotion's refusals, promotion and rollback."""

from __future__ import annotations

import psycopg
import pytest

from pipeline.chunking import ChunkConfig
from pipeline.sources.records import Record
from pipeline.store import SourceRow, Store
from pipeline.training.promotion import (
    SOURCES,
    TrainedModel,
    coverage,
    promote,
    promoted,
    record_trained,
    rollback,
    rollback_target,
    trained,
)
from secrag.db import database
from secrag.db.queries import Queries
from secrag.errors import PromotionRefused
from secrag.files.package_data import sql_dir

SQL = sql_dir()
A, B, C = "attack-minilm-aaaaaaaaaa", "attack-minilm-bbbbbbbbbb", "attack-minilm-cccccccccc"
FIGURES = {"vote_ndcg10": 0.70, "vote_p1": 0.60, "examples": 120}
BASELINE = {"vote_ndcg10": 0.60, "vote_p1": 0.50, "examples": 120}
LACKING = """SELECT c.content_hash FROM chunks c WHERE NOT EXISTS
    (SELECT 1 FROM embeddings e WHERE e.content_hash = c.content_hash AND e.model_id = %s)"""


def _publish(db: psycopg.Connection) -> dict[str, list[str]]:
    """Two chunks in each ATT&CK source the sentence path reads and one in a source it does not; each
    source's content hashes."""
    store = Store(SQL)
    hashes: dict[str, list[str]] = {}
    for source, n in (("mitre_attack_procedures", 2), ("mitre_attack", 2), ("notes", 1)):
        store.register_source(db, SourceRow(name=source, kind="static"))
        records = [
            Record(source=source, upstream_id=f"{source}{i}", title=f"t{i}", body=f"{source} {i}") for i in range(n)
        ]
        store.publish(db, source=source, version="v1", records=records, lookup={}, chunking=ChunkConfig())
        rows = db.execute("SELECT content_hash FROM chunks WHERE source = %s", [source]).fetchall()
        hashes[source] = [h for (h,) in rows]
    return hashes


def _embed(db: psycopg.Connection, model: str, hashes: list[str]) -> None:
    db.execute(Queries(SQL, "store").ensure_model, {"model": model, "dimensions": 3})
    for h in hashes:
        db.execute("INSERT INTO embeddings (content_hash, model_id, vector) VALUES (%s, %s, '[1,0,0]')", [h, model])


def _row(model_id: str, *, passed: bool = True, **changes: object) -> TrainedModel:
    fields: dict[str, object] = {
        "model_id": model_id,
        "served_model": f"{model_id}-int8",
        "base_model": "all-MiniLM-L6-v2",
        "attack_version": "v18.1",
        "data_digest": "ab" * 32,
        "recipe": {"steps": 600, "seed": 1337},
        "validation": FIGURES if passed else {**FIGURES, "vote_ndcg10": 0.55},
        "baseline": BASELINE,
        "passed": passed,
        "train_seconds": 812.5,
    }
    return TrainedModel(**{**fields, **changes})  # type: ignore[arg-type]


def _statuses(db: psycopg.Connection) -> dict[str, tuple[str, bool]]:
    """Each trained model's status and whether it has a promotion time."""
    return {m.model_id: (m.status, m.promoted_at is not None) for m in trained(db, SQL)}


@pytest.fixture
def covered(db: psycopg.Connection) -> psycopg.Connection:
    """A store whose ATT&CK chunks have vectors of A's, B's and C's served models, the three recorded."""
    hashes = _publish(db)
    attack = [h for source in SOURCES for h in hashes[source]]
    for model in (A, B, C):
        _embed(db, f"{model}-int8", attack)
        record_trained(db, SQL, _row(model))
    return db


def test_a_trained_model_is_recorded_with_its_lineage(db: psycopg.Connection) -> None:
    assert record_trained(db, SQL, _row(A)) == "candidate"
    assert record_trained(db, SQL, _row(B, passed=False, replaces=A)) == "rejected"
    rows = {m.model_id: m for m in trained(db, SQL)}
    assert set(rows) == {A, B} and promoted(db, SQL) is None
    b = rows[B]
    assert (b.served_model, b.base_model, b.replaces, b.attack_version) == (f"{B}-int8", "all-MiniLM-L6-v2", A, "v18.1")
    assert b.recipe == {"steps": 600, "seed": 1337} and b.baseline == BASELINE and b.validation["vote_ndcg10"] == 0.55
    assert b.trained_at is not None and b.promoted_at is None and b.train_seconds == 812.5
    assert record_trained(db, SQL, _row(B, passed=True)) == "candidate"  # recorded again: new figures, new status
    assert next(m for m in trained(db, SQL) if m.model_id == B).validation == FIGURES


def test_coverage_counts_the_attack_chunks_without_a_vector(db: psycopg.Connection) -> None:
    hashes = _publish(db)
    assert coverage(db, SQL, f"{A}-int8") == 4  # the notes chunk is no chunk of the sentence path
    _embed(db, f"{A}-int8", hashes["mitre_attack_procedures"] + hashes["notes"])
    assert coverage(db, SQL, f"{A}-int8") == 2
    assert coverage(db, SQL, f"{A}-int8", ["mitre_attack_procedures"]) == 0
    _embed(db, f"{B}-int8", hashes["mitre_attack"])  # another model's vectors cover nothing of A's
    assert coverage(db, SQL, f"{A}-int8", ["mitre_attack"]) == 2


def test_promotion_is_refused_for_an_unknown_an_uncovering_or_a_failed_model(db: psycopg.Connection) -> None:
    hashes = _publish(db)
    with pytest.raises(PromotionRefused, match=r"'nope' is not recorded in the store \(recorded: none yet\)"):
        promote(db, SQL, "nope")
    record_trained(db, SQL, _row(A))
    record_trained(db, SQL, _row(B, passed=False))
    _embed(db, f"{A}-int8", hashes["mitre_attack_procedures"][:1] + hashes["mitre_attack"])
    with pytest.raises(
        PromotionRefused, match=f"1 of the 4 chunks of mitre_attack_procedures, mitre_attack have no vector of {A}-int8"
    ) as caught:
        promote(db, SQL, A, force=True)  # force never overrides coverage
    assert f"embed those sources with {A}-int8 first" in caught.value.hint
    with pytest.raises(PromotionRefused, match=f"recorded: {A}, {B}"):
        promote(db, SQL, "nope")
    _embed(db, f"{B}-int8", [h for source in SOURCES for h in hashes[source]])
    with pytest.raises(
        PromotionRefused, match=r"did not pass its quality gate \(vote nDCG@10 0.550 vs 0.600, P@1 0.600 vs 0.500\)"
    ) as gate:
        promote(db, SQL, B)
    assert "--force" in gate.value.hint
    assert promoted(db, SQL) is None and _statuses(db) == {A: ("candidate", False), B: ("rejected", False)}
    forced = promote(db, SQL, B, force=True)
    assert (forced.promoted, forced.served_model, forced.previous, forced.changed) == (B, f"{B}-int8", None, True)
    assert _statuses(db)[B] == ("promoted", True)


def test_promote_retires_the_one_before_and_rollback_walks_back(covered: psycopg.Connection) -> None:
    db = covered
    first = promote(db, SQL, A)
    assert (first.promoted, first.previous, first.changed) == (A, None, True)
    assert not promote(db, SQL, A).changed  # already promoted: nothing moves
    second = promote(db, SQL, B)
    assert (second.promoted, second.served_model, second.previous) == (B, f"{B}-int8", A)
    promote(db, SQL, C)
    assert _statuses(db) == {A: ("retired", True), B: ("retired", True), C: ("promoted", True)}
    serving = Queries(SQL, "serving").promoted_sentence_model
    assert db.execute(serving).fetchall() == [(f"{C}-int8",)]

    back = rollback(db, SQL)
    assert (back.promoted, back.served_model, back.previous) == (B, f"{B}-int8", C)
    assert _statuses(db) == {A: ("retired", True), B: ("promoted", True), C: ("retired", False)}
    assert rollback(db, SQL).promoted == A  # one further back, never forth to C
    general = rollback(db, SQL)
    assert (general.promoted, general.served_model, general.previous) == (None, None, A)
    assert promoted(db, SQL) is None and db.execute(serving).fetchall() == []
    with pytest.raises(PromotionRefused, match="no trained model is promoted: the general model serves"):
        rollback(db, SQL)


def test_a_rollback_after_a_new_promotion_returns_to_the_model_it_replaced(covered: psycopg.Connection) -> None:
    db = covered
    promote(db, SQL, A)
    promote(db, SQL, B)
    assert rollback(db, SQL).promoted == A  # B rolled back
    promote(db, SQL, C)
    assert rollback(db, SQL).promoted == A  # C replaced A: back to A, not to B (rolled back before)
    assert rollback(db, SQL).promoted is None
    promote(db, SQL, B)  # a rolled-back model may be promoted again
    assert rollback(db, SQL).promoted is None  # the general model served before it
    assert record_trained(db, SQL, _row(A, passed=False)) == "retired"  # recorded again: its status is kept


def test_at_most_one_trained_model_is_promoted(covered: psycopg.Connection) -> None:
    db = covered
    promote(db, SQL, A)
    with pytest.raises(psycopg.errors.UniqueViolation):
        db.execute("UPDATE trained_models SET status = 'promoted', promoted_at = now() WHERE model_id = %s", [B])


def test_the_reader_reads_the_promoted_sentence_model_not_the_lineage(covered: psycopg.Connection, db_url: str) -> None:
    promote(covered, SQL, B)
    with database.connect(db_url, autocommit=True) as conn:
        conn.execute("SET ROLE secrag_reader")
        assert conn.execute(Queries(SQL, "serving").promoted_sentence_model).fetchall() == [(f"{B}-int8",)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT validation FROM trained_models")


def test_a_rollback_to_a_model_lacking_vectors_is_refused_as_a_promotion_is(covered: psycopg.Connection) -> None:
    db = covered
    promote(db, SQL, A)
    promote(db, SQL, B)
    store = Store(SQL)  # a new version of ATT&CK, embedded (as publishes do) for the promoted model only
    records = [Record(source="mitre_attack", upstream_id=f"m{i}", title=f"t{i}", body=f"v2 {i}") for i in range(3)]
    store.publish(db, source="mitre_attack", version="v2", records=records, lookup={}, chunking=ChunkConfig())
    new = [h for (h,) in db.execute(LACKING, [f"{B}-int8"]).fetchall()]
    _embed(db, f"{B}-int8", new)
    assert coverage(db, SQL, f"{B}-int8") == 0 and coverage(db, SQL, f"{A}-int8") > 0
    lacking = coverage(db, SQL, f"{A}-int8")
    target = rollback_target(db, SQL)
    assert target is not None and target.model_id == A
    message = f"{lacking} of the 5 chunks of mitre_attack_procedures, mitre_attack have no vector of {A}-int8"
    with pytest.raises(PromotionRefused, match=message) as caught:
        rollback(db, SQL)
    assert "secrag models rollback --embed" in caught.value.hint
    assert _statuses(db) == {A: ("retired", True), B: ("promoted", True), C: ("candidate", False)}  # nothing moved
    _embed(db, f"{A}-int8", new)
    back = rollback(db, SQL)
    assert (back.promoted, back.previous) == (A, B)
    assert rollback_target(db, SQL) is None  # the general model is next
