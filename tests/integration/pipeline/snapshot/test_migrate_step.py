"""The migrate step of deploy/compose.yaml, run as written (its `sh -c` command, with this environment's `secrag`)
against a fresh database: the first run migrates and loads SECRAG_START_FROM, the second leaves it aside, and with
no snapshot named (unset, or empty as in an image built without one) it migrates and says so in one line; a
tampered snapshot (a tenant's document) or an unsigned one from a URL fails the step with the store migrated and
empty. And the image build's check of a snapshot, `secrag snapshot verify`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from pipeline.snapshot.manifest import ModelFacts
from secrag.db import database, migrations
from secrag.db.queries import Queries, one_row
from secrag.settings import REPO_ROOT, get_settings
from secrag_cli.main import cli

from .conftest import MODEL, SQL_DIR
from .crafted import crafted_snapshot
from .test_refused import rewritten, with_one_byte_changed
from .test_tampered import PUBLIC_ONLY

BIN = Path(sys.executable).parent
STEP: list[str] = yaml.safe_load((REPO_ROOT / "deploy" / "compose.yaml").read_text())["services"]["migrate"]["command"]
NOTHING = "no snapshot to start from: SECRAG_START_FROM is unset"


def run_step(url: str, models_dir: Path, cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """The migrate step in a clean environment: the database, the snapshot's model, and `variables`."""
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith("SECRAG_") and k not in ("DATABASE_URL", "PYTHONPATH")
    }
    env = keep | {
        "PATH": f"{BIN}{os.pathsep}{keep.get('PATH', '')}",
        "SECRAG_DATABASE_URL": url,
        "SECRAG_EMBEDDING_MODEL": MODEL,
        "SECRAG_MODEL_CACHE_DIR": str(models_dir),
        "SECRAG_DATA_DIR": str(cwd / "data"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }
    return subprocess.run(STEP, cwd=cwd, env=env | variables, capture_output=True, text=True, timeout=600, check=False)


def store_state(url: str) -> tuple[int, int, int]:
    """The schema version, public documents and embeddings of the store at `url`."""
    with database.connect(url, autocommit=True) as conn:
        version = migrations.current_version(conn, SQL_DIR)
        if not version:
            return 0, 0, 0
        documents = one_row(conn.execute(Queries(SQL_DIR, "snapshot").public_documents))[0]
        vectors = one_row(conn.execute("SELECT count(*) FROM embeddings"))[0]
    return version, int(documents), int(vectors)


def test_the_step_is_the_migrations_then_the_import() -> None:
    assert STEP == ["sh", "-c", "secrag db migrate && exec secrag snapshot import --once"]


def test_the_first_start_loads_the_snapshot_and_later_ones_leave_it_aside(
    snapshot_file: Path, models_dir: Path, empty_db_url: str, tmp_path: Path
) -> None:
    assert store_state(empty_db_url) == (0, 0, 0)
    first = run_step(empty_db_url, models_dir, tmp_path, SECRAG_START_FROM=str(snapshot_file))
    assert first.returncode == 0, first.stdout + first.stderr
    assert "snapshot imported" in first.stdout, first.stdout
    version, documents, vectors = loaded = store_state(empty_db_url)
    assert version == migrations.latest_version(SQL_DIR)
    assert documents > 0 and vectors > 0

    second = run_step(empty_db_url, models_dir, tmp_path, SECRAG_START_FROM=str(snapshot_file))
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"left aside: the store already holds {documents} public documents" in second.stdout
    assert store_state(empty_db_url) == loaded


@pytest.mark.parametrize("start_from", [None, ""], ids=["unset", "empty"])
def test_without_a_snapshot_the_step_only_migrates(
    start_from: str | None, models_dir: Path, empty_db_url: str, tmp_path: Path
) -> None:
    variables = {} if start_from is None else {"SECRAG_START_FROM": start_from}
    result = run_step(empty_db_url, models_dir, tmp_path, **variables)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == NOTHING and result.stdout.count(NOTHING) == 1
    assert store_state(empty_db_url) == (migrations.latest_version(SQL_DIR), 0, 0)
    again = run_step(empty_db_url, models_dir, tmp_path, **variables)  # migrated already: the import's line alone
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines()[-1] == NOTHING


def test_a_tampered_snapshot_fails_the_step_and_leaves_the_store_empty(
    source_store: str, model: ModelFacts, models_dir: Path, empty_db_url: str, tmp_path: Path
) -> None:
    first_sigma = "(SELECT min(doc_id) FROM documents WHERE source = 'sigma')"
    tamper = [f"UPDATE documents SET tenant = 'globex' WHERE doc_id = {first_sigma}"]
    tampered = crafted_snapshot(source_store, model, tmp_path / "tampered.tar", tamper=tamper, where=PUBLIC_ONLY)
    result = run_step(empty_db_url, models_dir, tmp_path, SECRAG_START_FROM=str(tampered))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "parts/documents.copy holds a row that is not public: " in result.stderr, result.stderr
    assert "(tenant 'globex'); nothing was imported" in result.stderr, result.stderr
    assert store_state(empty_db_url) == (migrations.latest_version(SQL_DIR), 0, 0)

    url = "http://127.0.0.1:9/store.tar"  # nothing listens there: the step refuses before it would connect
    result = run_step(empty_db_url, models_dir, tmp_path, SECRAG_START_FROM=url)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"the snapshot {url} is named by URL and SECRAG_SNAPSHOT_PUBLIC_KEY is unset" in result.stderr
    assert store_state(empty_db_url) == (migrations.latest_version(SQL_DIR), 0, 0)


def verify(monkeypatch: pytest.MonkeyPatch, models_dir: Path, path: Path) -> tuple[int, str]:
    monkeypatch.setenv("SECRAG_EMBEDDING_MODEL", MODEL)
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(models_dir))
    monkeypatch.delenv("SECRAG_SNAPSHOT_PUBLIC_KEY", raising=False)
    get_settings.cache_clear()
    result = CliRunner().invoke(cli, ["snapshot", "verify", str(path)])
    get_settings.cache_clear()
    return result.exit_code, result.output


def test_the_image_builds_check_needs_no_store(
    snapshot_file: Path, models_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SECRAG_DATABASE_URL", "postgresql://nobody@127.0.0.1:9/none")  # never reached
    code, out = verify(monkeypatch, models_dir, snapshot_file)
    assert code == 0, out
    assert (
        f"snapshot {snapshot_file} verified: schema version {migrations.latest_version(SQL_DIR)}, model {MODEL}" in out
    )

    changed = with_one_byte_changed(snapshot_file, tmp_path / "changed.tar")
    code, out = verify(monkeypatch, models_dir, changed)
    assert code == 1 and "parts/chunks.copy does not match its checksum" in out, out

    older = rewritten(snapshot_file, tmp_path, lambda m: m.update(schema_version=m["schema_version"] - 1))
    code, out = verify(monkeypatch, models_dir, older)
    assert code == 1 and "; this release is at" in out, out
