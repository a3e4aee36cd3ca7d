"""Log formats: JSON lines keep every `extra=` field; text stays as people read it."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator

import pytest

from secrag import logs


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_json_lines_keep_structured_fields(restore_logging: None, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure("json")
    logging.getLogger("secrag.test").info("published", extra={"source": "sigma", "documents": 3120})
    record = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert record["message"] == "published" and record["level"] == "INFO" and record["name"] == "secrag.test"
    assert record["source"] == "sigma" and record["documents"] == 3120


def test_text_is_one_plain_line(restore_logging: None, capsys: pytest.CaptureFixture[str]) -> None:
    logs.configure("text", "warning")
    logging.getLogger("secrag.test").info("hidden")
    logging.getLogger("secrag.test").warning("shown")
    assert capsys.readouterr().err.strip().endswith("WARNING secrag.test: shown")


def test_uvicorn_logs_through_the_same_handler() -> None:
    config = logs.config_dict("json")
    assert config["loggers"]["uvicorn.access"] == {"handlers": [], "propagate": True}
    with pytest.raises(ValueError, match="log format"):
        logs.config_dict("xml")  # type: ignore[arg-type]


def test_the_command_line_takes_the_format_from_the_environment() -> None:
    code = "from secrag_cli.main import cli; cli(['sources', 'list'])"
    env = {"SECRAG_LOG_FORMAT": "json", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    for line in result.stderr.strip().splitlines():
        assert isinstance(json.loads(line), dict)


def test_text_ends_in_the_structured_fields(restore_logging: None, capsys: pytest.CaptureFixture[str]) -> None:
    """An operator reading the plain text sees the cause of an error (issue 43): its kind, SQLSTATE, class."""
    logs.configure("text")
    log = logging.getLogger("secrag.test")
    log.error("database error", extra={"kind": "database_error", "sqlstate": "XX000", "error": "InternalError_"})
    log.info("published", extra={"source": "sigma", "documents": 3120, "path": "/a b", "note": ""})
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("unhandled error", extra={"kind": "internal"})
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].endswith(
        "ERROR secrag.test: database error kind=database_error sqlstate=XX000 error=InternalError_"
    )
    assert lines[1].endswith('INFO secrag.test: published source=sigma documents=3120 path="/a b" note=""')
    assert lines[2].endswith("ERROR secrag.test: unhandled error kind=internal")  # the fields before the traceback
    assert lines[-1] == "ValueError: boom"
