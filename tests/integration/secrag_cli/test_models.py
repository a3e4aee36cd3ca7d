"""`secrag models list|prune|export|fetch` against a real store and the model registry."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from pipeline.model_store import stored_models
from secrag.files.package_data import sql_dir
from secrag_cli.models import models
from tests.integration.pipeline.test_model_store import FP32, INT8, add_vectors

SQL_DIR = sql_dir()


def test_the_prune_command_lists_then_removes(
    db: psycopg.Connection, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_vectors(db, INT8, 2)
    monkeypatch.setenv("SECRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("SECRAG_EMBEDDING_MODEL", FP32)
    monkeypatch.delenv("SECRAG_SERVING_MODEL", raising=False)
    listed = CliRunner().invoke(models, ["list"])
    assert listed.exit_code == 0, listed.output
    assert "not configured (prunable)" in listed.output and "active, configured" in listed.output
    dry = CliRunner().invoke(models, ["prune"])
    assert dry.exit_code == 0 and f"would prune {INT8}: 2 vectors" in dry.output
    assert [m.model_id for m in stored_models(db, SQL_DIR)] == [FP32, INT8]
    done = CliRunner().invoke(models, ["prune", "--yes"])
    assert done.exit_code == 0 and f"pruned {INT8}: 2 vectors" in done.output
    assert [m.model_id for m in stored_models(db, SQL_DIR)] == [FP32]
    again = CliRunner().invoke(models, ["prune"])
    assert "nothing to prune" in again.output


def test_export_fills_the_model_cache_and_refuses_unknown_models(monkeypatch: pytest.MonkeyPatch) -> None:
    from secrag.models.onnx_export import onnx_path
    from secrag.settings import Settings

    cache = Settings(_env_file=None).models_dir  # type: ignore[call-arg]  # the suite's exports, reused
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(cache))
    done = CliRunner().invoke(models, ["export", "--model", INT8])
    assert done.exit_code == 0, done.output
    assert f"{INT8}: {onnx_path(INT8, cache)} (sha256 " in done.output
    refused = CliRunner().invoke(models, ["export", "--model", "bert-huge"])
    assert refused.exit_code == 1 and "embedding model 'bert-huge' is not in the model registry" in refused.output


def test_fetch_refuses_what_it_cannot_verify_and_keeps_what_is_there(tiny_bert: Path, tmp_path: Path) -> None:
    """No request is made here: the refusals come first, and a fetched model's intact files are kept."""
    from secrag.models.onnx_export import file_sha256
    from secrag.models.registry import load_registry
    from secrag.models.weights import hub_folder
    from secrag.settings import get_settings
    from tests.plugins.tiny_model import TINY, models_file_text

    names = ("config.json", "model.safetensors", "tokenizer.json")
    pins = ", ".join(f"{name}: {file_sha256(tiny_bert / name)}" for name in names)
    source = f"{{hub: secrag-tests/tiny-bert, revision: {'f' * 40}, files: {{{pins}}}}}"
    models_file = tmp_path / "models.yaml"
    models_file.write_text(models_file_text(source), encoding="utf-8")
    folder = hub_folder(load_registry(models_file).get(TINY).source, tmp_path / "models")  # type: ignore[arg-type]
    folder.mkdir(parents=True)
    for name in names:
        shutil.copyfile(tiny_bert / name, folder / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SECRAG_MODELS_FILE", str(models_file))
        patch.setenv("SECRAG_MODEL_CACHE_DIR", str(tmp_path / "models"))
        patch.setenv("SECRAG_MODELS_HUB_URL", "https://hub.invalid")
        get_settings.cache_clear()  # the registry is the process settings' (SECRAG_MODELS_FILE)
        try:
            kept = CliRunner().invoke(models, ["fetch", f"{TINY}-int8"])
            unpinned = CliRunner().invoke(models, ["fetch", "bge-base-en-v1.5"])
            packaged = CliRunner().invoke(models, ["fetch", INT8])
            unknown = CliRunner().invoke(models, ["fetch", "bert-huge"])
        finally:
            get_settings.cache_clear()
    assert kept.exit_code == 0, kept.output
    assert f"{TINY}-int8: {folder} (0 files fetched, 3 already there)" in kept.output
    assert unpinned.exit_code == 1 and "the registry pins no sha256 for 1_Pooling/config.json" in unpinned.output
    assert packaged.exit_code == 1 and "its weights come from a package: nothing to fetch" in packaged.output
    assert unknown.exit_code == 1 and "'bert-huge' is not in the model registry" in unknown.output


def test_trained_models_are_listed_promoted_and_rolled_back(
    db: psycopg.Connection, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.training.promotion import SOURCES, record_trained
    from secrag.models.registry import load_registry
    from secrag.models.trained import trained_folder, write_models_file
    from tests.integration.pipeline.training.test_promotion import A, B, _embed, _publish, _row

    hashes = _publish(db)
    _embed(db, f"{A}-int8", [h for source in SOURCES for h in hashes[source]])
    record_trained(db, SQL_DIR, _row(A))
    record_trained(db, SQL_DIR, _row(B, passed=False))
    unrecorded = trained_folder(tmp_path, "attack-minilm-dddddddddd")
    unrecorded.mkdir(parents=True)
    write_models_file(unrecorded, unrecorded.name, load_registry(None).get(FP32))
    monkeypatch.setenv("SECRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(tmp_path))
    listed = CliRunner().invoke(models, ["trained"])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].split()[:3] == ["model", "status", "passed"]
    row = next(line for line in lines if line.startswith(B))
    assert (
        row.split()[:5] == [B, "rejected", "no", FP32, "v18.1"] and "0.550 vs 0.600" in row and "0.600 vs 0.500" in row
    )
    assert "the sentence path: the general model (no trained model is promoted)" in listed.output
    assert f"not recorded in the store: {unrecorded.name}" in listed.output

    refused = CliRunner().invoke(models, ["promote", B])
    assert refused.exit_code == 1
    assert (
        f"error: 4 of the 4 chunks of mitre_attack_procedures, mitre_attack have no vector of {B}-int8"
        in refused.output
    )
    done = CliRunner().invoke(models, ["promote", A])
    assert done.exit_code == 0, done.output
    assert f"promoted {A}: the sentence path serves {A}-int8 (was the general model)" in done.output
    again = CliRunner().invoke(models, ["promote", A])
    assert f"{A} is already promoted" in again.output
    assert f"the sentence path: {A}-int8 (promoted " in CliRunner().invoke(models, ["trained"]).output
    back = CliRunner().invoke(models, ["rollback"])
    assert back.exit_code == 0 and f"rolled back {A}: the sentence path serves the general model" in back.output
    nothing = CliRunner().invoke(models, ["rollback"])
    assert nothing.exit_code == 1 and "error: no trained model is promoted" in nothing.output


def test_promote_and_rollback_embed_the_missing_vectors_when_asked(
    db: psycopg.Connection, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's served model is the packaged int8 encoder (real vectors); B's vectors are the test's own."""
    from pipeline.chunking import ChunkConfig
    from pipeline.sources.records import Record
    from pipeline.store import Store
    from pipeline.training.promotion import SOURCES, coverage, promoted, record_trained
    from secrag.settings import Settings
    from tests.integration.pipeline.training.test_promotion import LACKING, A, B, _embed, _publish, _row

    hashes = _publish(db)
    _embed(db, f"{B}-int8", [h for source in SOURCES for h in hashes[source]])
    record_trained(db, SQL_DIR, _row(A, served_model=INT8))
    record_trained(db, SQL_DIR, _row(B))
    monkeypatch.setenv("SECRAG_DATABASE_URL", db_url)
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(Settings(_env_file=None).models_dir))  # type: ignore[call-arg]

    refused = CliRunner().invoke(models, ["promote", A])
    assert refused.exit_code == 1 and f"have no vector of {INT8}" in refused.output
    assert f"`secrag models promote {A} --embed`" in refused.output
    done = CliRunner().invoke(models, ["promote", A, "--embed"])
    assert done.exit_code == 0, done.output
    assert f"embedded 4 chunks with {INT8}" in done.output and f"promoted {A}" in done.output
    assert CliRunner().invoke(models, ["promote", B]).exit_code == 0

    records = [Record(source="mitre_attack", upstream_id=f"m{i}", title=f"t{i}", body=f"v2 {i}") for i in range(3)]
    Store(SQL_DIR).publish(db, source="mitre_attack", version="v2", records=records, lookup={}, chunking=ChunkConfig())
    _embed(db, f"{B}-int8", [h for (h,) in db.execute(LACKING, [f"{B}-int8"]).fetchall()])  # as publishes do
    assert coverage(db, SQL_DIR, INT8) == 3
    refused = CliRunner().invoke(models, ["rollback"])
    assert refused.exit_code == 1
    assert (
        f"error: 3 of the 5 chunks of mitre_attack_procedures, mitre_attack have no vector of {INT8}" in refused.output
    )
    assert "`secrag models rollback --embed`" in refused.output
    assert (current := promoted(db, SQL_DIR)) is not None and current.model_id == B  # nothing moved
    back = CliRunner().invoke(models, ["rollback", "--embed"])
    assert back.exit_code == 0, back.output
    assert f"embedded 3 chunks with {INT8}" in back.output
    assert f"rolled back {B}: the sentence path serves {A} ({INT8})" in back.output
    assert coverage(db, SQL_DIR, INT8) == 0
