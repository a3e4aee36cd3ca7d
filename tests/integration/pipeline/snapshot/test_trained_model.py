"""The promoted sentence model travels in a snapshot: a store whose sentence path a trained model serves (the tiny
BERT of tests/plugins/tiny_model.py as the general model, trained one step on the quality gate test's store) is
exported, its models folder removed, and imported into a fresh store with a models folder of its own (a new
replica). The replica has the model's files, its row with its gate figures, serves it from its first search and
answers sentences with the same ids and scores. The map's verifier kept in the model's folder (verifier.json) travels
with it: the replica's API reads it and maps a text as the exporting store's did. A model file (the verifier's
included) changed in the snapshot is refused, and so are vectors of a model the manifest does not name."""

from __future__ import annotations

import io
import shutil
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pipeline.activation import activate_model_if_complete
from pipeline.snapshot.export import export_snapshot
from pipeline.snapshot.loading import import_snapshot, local_model
from pipeline.snapshot.manifest import MANIFEST, parse_manifest
from pipeline.training import promotion
from pipeline.training.fine_tune import Recipe
from pipeline.training.trainer import TrainingConfig, train_sentence_model
from secrag.db import database
from secrag.errors import SnapshotRefused
from secrag.mapping.verifier import VERIFIER_FILE, Verifier, read_verifier, write_verifier
from secrag.models.encoders import document_encoder
from secrag.models.onnx_export import file_sha256
from secrag.models.registry import model_info
from secrag.models.trained import trained_folder
from secrag.settings import get_settings
from serving.mapping import verifier_file
from serving.search.encoder import shared_encoder, torch_embedder
from tests.integration.pipeline.training.test_quality_gate import models_dir, store  # noqa: F401 - fixtures
from tests.integration.pipeline.training.test_trainer import TECHNIQUES
from tests.integration.serving.test_map_verified import HASHES, _verifier
from tests.plugins.tiny_model import TINY_INT8

from .conftest import SQL_DIR, api

ATTACK = {"sources": ["mitre_attack", "mitre_attack_procedures"]}
# Sentences of reports' shape (the sentence path's), none of them a stored example's text.
QUERIES = [f"The actor {phrases[0]}" for _, _, _, _, phrases in TECHNIQUES[:4]] + [
    "The intruders ran encoded PowerShell commands and dumped credentials from memory on the server."
]
MAP_TEXT = "\n".join(q.rstrip(".") + "." for q in QUERIES) + f"\n{HASHES}\n"  # the verifier's gate sets aside HASHES


@contextmanager
def _serving(url: str, models: Path, served: str, config: Path, held: tuple[str, ...]) -> Iterator[Any]:
    """A client of the API on `url`, its sentence model loaded (checked: `served`) and the ATT&CK vectors of the
    models `held` in memory first, as its warm-up does: held first, every request takes the same path on both
    stores (a background load finishing between two would move some from PostgreSQL's distances to the held ones)."""
    with api(
        url, embedding_model=TINY_INT8, model_cache_dir=models, search_config=config, search_source_vectors_mb=64
    ) as client:
        service = client.app.state.service  # type: ignore[attr-defined]
        encoder = service.sentence.load_now()
        assert encoder is not None and encoder.model_id == served
        for model in held:
            for source in ATTACK["sources"]:
                assert service.source_vectors.load(model, source, encoder.dimensions), (model, source)
        yield client


def _answers(url: str, models: Path, served: str, config: Path) -> list[list[tuple[str, str, float]]]:
    """The API's answers to QUERIES with both models' ATT&CK vectors held. `config` names the neighbours leg's
    voting sources (every source of this store), so that leg reads the held vectors too: left to PostgreSQL it
    walks each store's own HNSW graph, whose levels are drawn at random."""
    out = []
    with _serving(url, models, served, config, (served, TINY_INT8)) as client:
        for query in QUERIES:
            response = client.post("/v1/search", json={"query": query, "k": 10, "filters": ATTACK})
            assert response.status_code == 200, response.text
            out.append([(r["doc_id"], r["chunk_id"], r["score"]) for r in response.json()["results"]])
    return out


def _mapped(url: str, models: Path, served: str, config: Path) -> dict[str, object]:
    """The API's map of MAP_TEXT on the held path (`config` turns the verifier on), the sentence model's ATT&CK
    vectors held."""
    with _serving(url, models, served, config, (served,)) as client:
        response = client.post("/v1/map", json={"text": MAP_TEXT, "min_score": 0})
        assert response.status_code == 200, response.text
        answer: dict[str, object] = response.json()
    answer.pop("took_ms")
    return answer


def _forget_loaded_models() -> None:
    """The process's loaded encoders and verifiers (a new replica is a new process)."""
    shared_encoder.cache_clear()
    torch_embedder.cache_clear()
    get_settings.cache_clear()
    verifier_file._READ.clear()


@pytest.fixture
def trained(store: psycopg.Connection, models_dir: Path) -> str:  # noqa: F811
    """The store's sentence path served by a tiny model trained one step (promoted: forced past its gate if
    it did not pass), the tiny model the active general model."""
    assert activate_model_if_complete(store, SQL_DIR, TINY_INT8).active == TINY_INT8
    outcome = train_sentence_model(
        store,
        SQL_DIR,
        TrainingConfig(base_model=TINY_INT8, models_dir=models_dir, recipe=Recipe(steps=1)),
        lambda model: document_encoder(model, batch_size=64, threads=1, cache_dir=models_dir),
    )
    promotion.promote(store, SQL_DIR, outcome.model_id, force=True)
    row = promotion.promoted(store, SQL_DIR)
    assert row is not None
    # The map's verifier kept beside it, as the pipeline's training writes it (its behaviour gate included).
    verifier = replace(_verifier(model_info(row.served_model).dimensions), model=row.served_model)
    write_verifier(trained_folder(models_dir, outcome.model_id), verifier)
    return outcome.model_id


def _rewritten(source: Path, target: Path, member: str = "", *, without_model: bool = False) -> None:
    """A copy of the snapshot whose `member` has one byte changed (same size: only its checksum tells), or
    (`without_model`) whose manifest and members leave the model out, its vectors left in the embeddings part."""
    with tarfile.open(source) as tar, tarfile.open(target, "w") as out:
        for info in tar.getmembers():
            fh = tar.extractfile(info)
            assert fh is not None
            data = fh.read()
            if without_model and info.name.startswith("models/"):
                continue
            if without_model and info.name == MANIFEST:
                data = replace(parse_manifest(data), trained=None).to_bytes()
                info.size = len(data)
            if info.name == member:
                data = bytes([data[0] ^ 1]) + data[1:]
            out.addfile(info, io.BytesIO(data))


def test_the_sentence_model_travels_and_serves_from_the_first_search(
    trained: str,
    store: psycopg.Connection,  # noqa: F811
    db_url: str,
    models_dir: Path,  # noqa: F811
    pg_server_url: str,
    template_db: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tests.plugins.database import migrated_copy

    row = promotion.promoted(store, SQL_DIR)
    assert row is not None and row.model_id == trained
    searched = tmp_path / "searched.yaml"
    searched.write_text(f"neighbours:\n  sources: {ATTACK['sources']}\n", encoding="utf-8")
    before = _answers(db_url, models_dir, row.served_model, searched)
    assert all(before)
    verifier = verifier_file.verifier_of(row.served_model)
    assert isinstance(verifier, Verifier) and verifier.gate is not None
    config = tmp_path / "search.yaml"
    config.write_text("map:\n  verify: true\n", encoding="utf-8")
    mapped = _mapped(db_url, models_dir, row.served_model, config)
    assert mapped["set_aside"] == 1 and mapped["techniques"]  # the verifier's gate at work
    weights = {p.name: file_sha256(p) for p in trained_folder(models_dir, trained).iterdir() if p.is_file()}

    snapshot = tmp_path / "store.tar"
    manifest = export_snapshot(db_url, SQL_DIR, models_dir, snapshot).manifest
    assert manifest.trained is not None and manifest.trained.model_id == trained
    assert manifest.trained.record["validation"] == dict(row.validation)
    assert {f.kind for f in manifest.trained.files} == {"weights", "int8"}
    assert [f.kind for f in manifest.trained.files if f.path == VERIFIER_FILE] == ["weights"]

    # A new replica: none of the exporting machine's model files, its own models folder.
    shutil.rmtree(models_dir)
    replica = tmp_path / "replica-models"
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(replica))
    _forget_loaded_models()
    with migrated_copy(pg_server_url, template_db, "secrag_snapshot_trained") as url:
        with database.connect(url, autocommit=True) as conn:
            done = import_snapshot(conn, SQL_DIR, snapshot, local_model(TINY_INT8, replica), models_dir=replica)
            assert (done.active_model, done.sentence_model) == (TINY_INT8, trained)
            imported = promotion.promoted(conn, SQL_DIR)
            assert imported is not None and imported.status == "promoted"
            assert (imported.validation, imported.baseline, imported.passed, imported.data_digest) == (
                row.validation,
                row.baseline,
                row.passed,
                row.data_digest,
            )
            assert promotion.coverage(conn, SQL_DIR, row.served_model) == 0
        folder = trained_folder(replica, trained)
        assert {name: file_sha256(folder / name) for name in weights} == weights
        assert (replica / manifest.trained.export.path).is_file()
        assert VERIFIER_FILE in weights
        replica_verifier = read_verifier(folder)
        assert replica_verifier is not None and replica_verifier.as_json() == verifier.as_json()
        after = _answers(url, replica, row.served_model, searched)
        mapped_after = _mapped(url, replica, row.served_model, config)
    assert after == before
    assert mapped_after == mapped


def test_a_changed_model_file_is_refused(
    trained: str,
    db_url: str,
    models_dir: Path,  # noqa: F811
    pg_server_url: str,
    template_db: str,
    tmp_path: Path,
) -> None:
    from tests.plugins.database import migrated_copy

    snapshot = tmp_path / "store.tar"
    export_snapshot(db_url, SQL_DIR, models_dir, snapshot)
    with tarfile.open(snapshot) as tar:
        fh = tar.extractfile(MANIFEST)
        assert fh is not None
        facts = parse_manifest(fh.read()).trained
    assert facts is not None
    replica = tmp_path / "replica-models"
    refused = []
    for file in facts.files:
        if file.path not in ("model.safetensors", VERIFIER_FILE, facts.export.path):
            continue
        refused.append(file.path)
        tampered = tmp_path / "tampered.tar"
        _rewritten(snapshot, tampered, file.member)
        with migrated_copy(pg_server_url, template_db, "secrag_snapshot_trained_tampered") as url:
            with database.connect(url, autocommit=True) as conn:
                with pytest.raises(SnapshotRefused, match=f"{file.member} does not match its checksum"):
                    import_snapshot(conn, SQL_DIR, tampered, local_model(TINY_INT8, models_dir), models_dir=replica)
                assert conn.execute("SELECT count(*) FROM trained_models").fetchone() == (0,)
                assert conn.execute("SELECT count(*) FROM documents").fetchone() == (0,)
        assert not trained_folder(replica, trained).exists()
    assert sorted(refused) == sorted(["model.safetensors", VERIFIER_FILE, facts.export.path])

    # The model left out of the manifest, its vectors left in: vectors of a model the manifest does not name.
    stripped = tmp_path / "stripped.tar"
    _rewritten(snapshot, stripped, without_model=True)
    with migrated_copy(pg_server_url, template_db, "secrag_snapshot_trained_tampered") as url:
        with database.connect(url, autocommit=True) as conn:
            with pytest.raises(SnapshotRefused, match=f"vectors of model {facts.served_model}, which its manifest"):
                import_snapshot(conn, SQL_DIR, stripped, local_model(TINY_INT8, models_dir), models_dir=replica)
            assert conn.execute("SELECT count(*) FROM documents").fetchone() == (0,)
