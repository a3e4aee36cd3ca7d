"""`secrag models list|prune` against a real store."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

from pipeline.model_store import stored_models
from secrag.package_data import sql_dir
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
    from secrag.onnx_export import onnx_path
    from secrag.settings import Settings

    cache = Settings(_env_file=None).models_dir  # type: ignore[call-arg]  # the suite's exports, reused
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(cache))
    done = CliRunner().invoke(models, ["export", "--model", INT8])
    assert done.exit_code == 0, done.output
    assert f"{INT8}: {onnx_path(INT8, cache)} (sha256 " in done.output
    refused = CliRunner().invoke(models, ["export", "--model", "bert-huge"])
    assert refused.exit_code == 1 and "embedding model 'bert-huge' is not in the model registry" in refused.output
