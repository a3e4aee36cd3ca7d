"""The built wheel is the product: installed into a fresh virtual environment outside the repository,
it migrates a database and answers a search with only what it ships (SQL and YAML as package data)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from secrag.settings import REPO_ROOT

_SEARCH = """
import json, sys
import secrag, serving
from fastapi.testclient import TestClient
from serving.api.app import create_app
from serving.settings import ServingSettings

settings = ServingSettings(_env_file=None, database_url=sys.argv[1], query_encoder="torch")
with TestClient(create_app(settings)) as client:
    ready = client.get("/readyz")
    found = client.post("/v1/search", json={"query": "lsass memory dump", "k": 3})
print(json.dumps({"secrag": secrag.__file__, "serving": serving.__file__, "ready": ready.status_code,
                  "search": found.status_code, "body": found.json()}))
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment outside the repository with only the wheel of secrag installed; the
    third-party packages come from this interpreter's site-packages (no network, no copies)."""
    root = tmp_path_factory.mktemp("wheel")
    # Build from a clean copy: setuptools reuses an in-tree build/ folder, which may hold files that
    # the package data no longer names.
    source = root / "source"
    shutil.copytree(
        REPO_ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", ".secrag", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
        ),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--wheel-dir",
            str(root / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = (root / "dist").glob("secrag-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A .pth line adds this environment's packages after the venv's own; the editable install of the
    # repository is not among them (its own .pth is processed only in a site directory).
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "secrag-test-deps.pth").write_text("\n".join(sorted(deps)) + "\n", encoding="utf-8")
    subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return venv


def _env(url: str) -> dict[str, str]:
    drop = ("PYTHONPATH", "DATABASE_URL", "SECRAG_DATABASE_URL", "SECRAG_SQL_DIR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {"DATABASE_URL": url, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def _run(command: list[str], url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=_env(url), capture_output=True, text=True, timeout=300, check=False)


def test_the_installed_wheel_migrates_and_searches(installed: Path, empty_db_url: str, tmp_path: Path) -> None:
    migrate = _run([str(installed / "bin" / "secrag"), "db", "migrate"], empty_db_url, tmp_path)
    assert migrate.returncode == 0, migrate.stderr
    assert "applied 0001_init" in migrate.stdout and "schema at version" in migrate.stdout

    run = _run([str(installed / "bin" / "python"), "-c", _SEARCH, empty_db_url], empty_db_url, tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    for module in ("secrag", "serving"):
        assert Path(result[module]).is_relative_to(installed), f"{module} came from {result[module]}"
    assert result["ready"] == 200 and result["search"] == 200, result["body"]
    assert result["body"]["results"] == []
