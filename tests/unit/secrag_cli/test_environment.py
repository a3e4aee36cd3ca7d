"""Every environment variable the code or the deployment files read is in the generated settings reference
(docs/configuration.md), once: read from the code (os.environ, getenv, click's envvar=) and from every file of
deploy/, workspace.yaml, dagster.yaml and the Makefile, then compared with the reference's tables."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from secrag.settings import REPO_ROOT
from secrag_cli.environment import command_line
from secrag_cli.main import cli
from secrag_cli.settings_docs import BEGIN, DOCS_FILE, END

# Read by the code, documented elsewhere on purpose:
EXCEPTIONS = {
    "HF_HUB_OFFLINE",  # Hugging Face's own switch: secrag sets it (setdefault) before loading a model
    "TRANSFORMERS_OFFLINE",  # the same for transformers
    "DAGSTER_HOME",  # Dagster's own: `secrag run` and the image set it; Dagster's docs describe it
    "TQDM_DISABLE",  # the progress bars of the model libraries, off in the processes `secrag run` starts
}
_CODE_READ = re.compile(
    r"""(?:environ(?:\.get|\.setdefault|\.pop)?\s*[\[(]\s*|getenv\(\s*|envvar\s*=\s*)["']([A-Z][A-Z0-9_]*)["']"""
)
_CONSTANT = re.compile(r"""^[A-Z_]+\s*=\s*["'](SECRAG_[A-Z0-9_]+)["']""", re.MULTILINE)  # preflight's INSTANCE_URL
_SECRAG = re.compile(r"\bSECRAG_[A-Z0-9][A-Z0-9_]*")
_ROW = re.compile(r"^\| ((?:`[A-Z][A-Z0-9_]*`(?: / )?)+) \|", re.MULTILINE)


def _reference() -> list[str]:
    """The variables of the generated tables, as often as a row names them."""
    text = (REPO_ROOT / DOCS_FILE).read_text(encoding="utf-8")
    block = text.split(BEGIN, 1)[1].split(END, 1)[0]
    return [name for cell in _ROW.findall(block) for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", cell)]


def _read_by_code() -> dict[str, str]:
    found = {}
    for top in ("secrag", "secrag_cli", "pipeline", "serving"):
        for path in sorted((REPO_ROOT / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            for name in [*_CODE_READ.findall(text), *_CONSTANT.findall(text)]:
                found.setdefault(name, path.relative_to(REPO_ROOT).as_posix())
    return found


def _deployment_files() -> list[Path]:
    deploy = [p for p in sorted((REPO_ROOT / "deploy").rglob("*")) if p.is_file() and "wheels" not in p.parts]
    return [*deploy, *(REPO_ROOT / name for name in ("workspace.yaml", "dagster.yaml", "Makefile"))]


def _read_by_deployment() -> dict[str, str]:
    found = {}
    for path in _deployment_files():
        for name in _SECRAG.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, path.relative_to(REPO_ROOT).as_posix())
    return found


def test_every_variable_the_code_reads_is_in_the_reference() -> None:
    documented = set(_reference())
    missing = {f"{where}: {name}" for name, where in _read_by_code().items() if name not in documented | EXCEPTIONS}
    assert not missing, "run `secrag settings docs --write` after adding them:\n" + "\n".join(sorted(missing))


def test_every_variable_a_deployment_file_names_is_in_the_reference() -> None:
    documented = set(_reference())
    missing = {f"{where}: {name}" for name, where in _read_by_deployment().items() if name not in documented}
    assert not missing, "\n".join(sorted(missing))


def test_each_variable_has_one_row() -> None:
    twice = [name for name, rows in Counter(_reference()).items() if rows > 1]
    assert not twice, twice


def test_the_variables_read_outside_the_models_are_documented() -> None:
    documented = set(_reference())
    for name in (
        "SECRAG_FORWARDED_ALLOW_IPS",
        "SECRAG_MCP_API_KEY",
        "SECRAG_DAGSTER_PG_URL",
        "SECRAG_DAGSTER_URL",
        "SECRAG_CODE_SERVER_HOST",
        "SECRAG_CODE_SERVER_PORT",
        "SECRAG_LOG_FORMAT",
    ):
        assert name in documented, name


def test_the_command_lines_variables_come_from_its_options() -> None:
    found = {v.name: v for v in command_line(cli)}
    assert found["SECRAG_MCP_API_KEY"].read_by == "`secrag mcp --api-key`"
    assert found["SECRAG_DAGSTER_URL"].default == "`http://127.0.0.1:3000`"
    assert found["SECRAG_FORWARDED_ALLOW_IPS"].default == "unset"
