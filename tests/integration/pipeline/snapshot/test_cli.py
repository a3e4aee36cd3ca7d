"""`secrag snapshot export|import|public-key` end to end: a signed export, its import with the operator's key,
and `import --once` leaving a started store as it is."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from secrag.settings import get_settings
from secrag_cli.main import cli

from .conftest import MODEL


@pytest.fixture
def settings_env(monkeypatch: pytest.MonkeyPatch, models_dir: Path) -> pytest.MonkeyPatch:
    monkeypatch.setenv("SECRAG_EMBEDDING_MODEL", MODEL)
    monkeypatch.setenv("SECRAG_MODEL_CACHE_DIR", str(models_dir))
    monkeypatch.delenv("SECRAG_START_FROM", raising=False)
    monkeypatch.delenv("SECRAG_SNAPSHOT_PUBLIC_KEY", raising=False)
    return monkeypatch


def invoke(env: pytest.MonkeyPatch, url: str, *args: str, **variables: str) -> tuple[int, str]:
    env.setenv("SECRAG_DATABASE_URL", url)
    for name, value in variables.items():
        env.setenv(name, value)
    get_settings.cache_clear()
    result = CliRunner().invoke(cli, ["snapshot", *args])
    get_settings.cache_clear()
    return result.exit_code, result.output


def test_a_signed_snapshot_goes_into_a_fresh_store_once(
    source_store: str, db: psycopg.Connection, db_url: str, settings_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = tmp_path / "key.pem"
    key.write_bytes(
        ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    target = tmp_path / "store.tar.gz"
    code, out = invoke(settings_env, source_store, "export", str(target), "--sign-key", str(key))
    assert code == 0, out
    assert f"model {MODEL}" in out and "signed" in out
    code, public = invoke(settings_env, source_store, "public-key", str(key))
    assert code == 0, public
    trusted = {"SECRAG_SNAPSHOT_PUBLIC_KEY": public.strip()}

    code, out = invoke(settings_env, db_url, "import", "--once", str(target), **trusted)
    assert code == 0, out
    assert "snapshot imported" in out and "signature verified" in out
    chunks = db.execute("SELECT count(*) FROM chunks").fetchone()
    assert chunks is not None and chunks[0] > 100

    code, out = invoke(settings_env, db_url, "import", "--once", **trusted, SECRAG_START_FROM=str(target))
    assert code == 0 and "left aside: the store already holds" in out, out
    code, out = invoke(settings_env, db_url, "import", str(target), **trusted)
    assert code == 1 and "error: this store already holds" in out, out
    assert db.execute("SELECT count(*) FROM chunks").fetchone() == chunks
